// What the page shows: badges, counters, the transcript and the timeline.
const $ = (id) => document.getElementById(id);
let t0 = performance.now();

export function resetClock() {
  t0 = performance.now();
}

export function log(kind, text, cls = "") {
  const li = document.createElement("li");
  li.className = cls;
  li.dataset.kind = kind;
  const t = document.createElement("span");
  t.className = "t";
  t.textContent = ((performance.now() - t0) / 1000).toFixed(3);
  li.append(t, `${kind}  ${text}`);
  const ol = $("log");
  ol.append(li);
  while (ol.children.length > 600) ol.firstChild.remove();
  ol.scrollTop = ol.scrollHeight;
  return li;
}

export function setStat(name, value) {
  const dd = document.querySelector(`[data-stat="${name}"]`);
  if (dd) dd.textContent = value;
}

export function setState(text, on) {
  const el = $("state");
  el.textContent = text;
  el.className = `badge ${on ? "on" : "off"}`;
}

export function setVad(speech) {
  const el = $("vad");
  el.textContent = speech ? "speech" : "silence";
  el.className = `badge vad${speech ? " speech" : ""}`;
}

function badges(target, caps) {
  target.replaceChildren();
  if (!caps) {
    const b = document.createElement("span");
    b.className = "badge off";
    b.textContent = "no capabilities (turn-based)";
    target.append(b);
    return;
  }
  for (const [k, v] of Object.entries(caps)) {
    if (k === "proxy" || (v !== null && typeof v === "object")) continue;
    const b = document.createElement("span");
    const name = k.replace(/^supports_/, "");
    // A missing duplex feature is red; other flags (how the model works) are informative.
    const off = k.startsWith("supports_") ? "no" : "off";
    b.className = `badge ${v === true ? "on" : v === false ? off : ""}`;
    b.textContent = typeof v === "boolean" ? name : `${name}: ${v}`;
    b.dataset.cap = k;
    target.append(b);
  }
}

export function showCapabilities(caps) {
  const proxy = (caps && caps.proxy) || {};
  $("mode").textContent = `mode: ${proxy.mode || "unknown"}`;
  $("mode").dataset.mode = proxy.mode || "";
  badges($("caps"), caps);
  badges($("upcaps"), proxy.upstream);
  $("reasons").textContent = (proxy.reasons || []).join("; ");
}

export function say(role, id) {
  let p = document.querySelector(`#transcript p[data-item="${id}"]`);
  if (!p) {
    p = document.createElement("p");
    p.className = role;
    p.dataset.item = id;
    p.textContent = role === "user" ? "you: (speech)" : "assistant: ";
    $("transcript").append(p);
  }
  return p;
}
