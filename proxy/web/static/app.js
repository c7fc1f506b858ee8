// Talk to the proxy: microphone in, assistant out, and a live view of the session.
// Protocol: docs in README.md (GA Realtime events, server_event_seq, session.resume,
// playback.ack, capabilities.proxy).
import { Player, b64ToInt16, int16ToB64, startCapture } from "./audio.js";
import * as view from "./view.js";

const $ = (id) => document.getElementById(id);
const FRAME_MS = 20;
const MAX_PENDING = 1500; // frames held while not connected (30 s)
const MAX_RETRIES = 5; // resumes in a row after the socket closed unasked
// What this page sends and plays: declared, so the proxy resamples whatever the upstream uses.
const PCM24 = { type: "audio/pcm", rate: 24000 };
const FORMATS = {
  type: "session.update",
  session: { type: "realtime", audio: { input: { format: PCM24 }, output: { format: PCM24 } } },
};

// Everything a test or a curious user may read from the console as `talk`.
const S = (window.talk = {
  ws: null, ready: false, closing: false, sessionId: null, resumeToken: null,
  mode: null, lastSeq: 0, events: 0, lost: 0, duplicated: 0, errors: [],
  sentMs: 0, receivedMs: 0, playedMs: 0, played: new Map(), frameTimes: [], pending: [],
  paddingMs: 0, response: null, speechStoppedAt: null, firstAudioMs: [], bargeIns: [],
  truncations: [], resumes: [], speechStarted: 0, capture: null, player: null, retries: 0, cut: null,
});

function model() {
  return $("model").value.trim();
}

function send(event) {
  if (S.ws && S.ws.readyState === WebSocket.OPEN) S.ws.send(JSON.stringify(event));
}

function onFrame(pcm) {
  S.frameTimes.push(performance.now()); // when input audio time frameTimes.length*20 ms was captured
  const event = { type: "input_audio_buffer.append", audio: int16ToB64(pcm) };
  if (S.ready) {
    send(event);
    S.sentMs += FRAME_MS;
  } else if (S.pending.length < MAX_PENDING) {
    S.pending.push(event);
  }
  if (S.frameTimes.length % 25 === 0) view.setStat("sentMs", `${S.sentMs} ms`);
}

function onPlayback(r) {
  // A position report is what has been rendered; what is audible now lags by the output
  // latency. Rendered audio that was drained or kept at a flush is heard in full.
  const ctx = S.player.ctx;
  const lag = r.type === "position" ? Math.round((ctx.outputLatency || ctx.baseLatency || 0) * 1000) : 0;
  const heard = Math.max(0, r.playedMs - lag);
  if (r.type !== "flushed" || heard > 0) {
    send({ type: "playback.ack", item_id: r.item, response_id: r.response, played_ms: heard });
  }
  S.played.set(r.item, r.playedMs);
  S.playedMs = [...S.played.values()].reduce((a, b) => a + b, 0);
  view.setStat("audio", `${Math.round(S.receivedMs)} / ${S.playedMs} ms`);
  if (r.type === "flushed") view.log("playback.flushed", `heard ${r.playedMs} ms, dropped ${r.droppedMs} ms`, "barge-in");
}

// With auth on, the key goes as a subprotocol (browsers cannot set headers on a
// WebSocket); the proxy selects "realtime" and never echoes the key.
function protocols() {
  const key = $("key").value.trim();
  return key ? ["realtime", `openai-insecure-api-key.${key}`] : [];
}

function url() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/v1/realtime?model=${encodeURIComponent(model())}`;
}

// A new session: its event seqs and its input audio clock start again.
function freshSession() {
  Object.assign(S, { lastSeq: 0, lost: 0, duplicated: 0, resumes: [], response: null, cut: null });
  Object.assign(S, { frameTimes: [], pending: [], sentMs: 0, speechStoppedAt: null });
}

function open(resume) {
  const ws = new WebSocket(url(), protocols());
  S.ws = ws;
  S.ready = false;
  ws.onopen = () => {
    if (!resume) ws.send(JSON.stringify(FORMATS));
    if (resume) {
      ws.send(JSON.stringify({
        type: "session.resume", session_id: S.sessionId, resume_token: S.resumeToken,
        last_received_server_event_seq: S.lastSeq,
      }));
      view.log("session.resume", `after seq ${S.lastSeq}`, "resume");
    }
  };
  ws.onmessage = (m) => S.ws === ws && onEvent(JSON.parse(m.data));
  ws.onclose = (e) => {
    if (S.ws !== ws) return;
    S.ready = false;
    view.setState("disconnected", false);
    view.log("socket.closed", `code ${e.code} ${e.reason}`, "error");
    if (!S.closing && S.sessionId && S.retries++ < MAX_RETRIES) {
      setTimeout(() => S.ws === ws && open(true), 500 * S.retries);
    }
  };
}

function checkSeq(ev) {
  const seq = ev.server_event_seq;
  if (typeof seq !== "number") return;
  if (seq <= S.lastSeq) S.duplicated += 1;
  else if (seq > S.lastSeq + 1) S.lost += seq - S.lastSeq - 1;
  const resume = S.resumes[S.resumes.length - 1];
  if (resume && resume.firstSeq === null) {
    resume.firstSeq = seq;
    resume.ok = seq === resume.afterSeq + 1;
    resume.li.append(`  → next event seq ${seq}: ${resume.ok ? "nothing lost, nothing repeated" : "GAP"}`);
  }
  S.lastSeq = Math.max(S.lastSeq, seq);
  view.setStat("lastSeq", S.lastSeq);
  view.setStat("integrity", `${S.lost} / ${S.duplicated}`);
}

function ready() {
  S.ready = true;
  S.retries = 0;
  view.setState("connected", true);
  for (const event of S.pending.splice(0)) {
    send(event);
    S.sentMs += FRAME_MS;
  }
}

// Capture time of input audio time `ms` (the proxy's audio_start_ms is on that clock).
function capturedAt(ms) {
  const t = S.frameTimes[Math.max(0, Math.floor(ms / FRAME_MS))];
  return t === undefined ? performance.now() : t;
}

const handlers = {
  "session.created"(ev) {
    const session = ev.session || {};
    S.sessionId = session.id || ev.session_id || null;
    S.resumeToken = ev.resume_token || null;
    S.mode = session.capabilities?.proxy?.mode || "unknown";
    const td = session.audio?.input?.turn_detection;
    S.paddingMs = (td && td.prefix_padding_ms) || 0;
    view.showCapabilities(session.capabilities);
    view.log("session.created", `${S.sessionId}  mode=${S.mode}`, "session");
    ready();
  },
  "session.resumed"(ev) {
    S.resumeToken = ev.resume_token || S.resumeToken;
    const li = view.log("session.resumed", `asked for events after seq ${S.lastSeq}`, "resume");
    S.resumes.push({ afterSeq: S.lastSeq, firstSeq: null, ok: null, li });
    view.setStat("resumes", S.resumes.length);
    ready();
  },
  "session.replaced"() {
    view.log("session.replaced", "another connection took this session", "error");
  },
  "input_audio_buffer.speech_started"(ev) {
    S.speechStarted += 1;
    view.setVad(true);
    const onsetMs = ev.audio_start_ms + (ev.audio_start_ms > 0 ? S.paddingMs : 0);
    // An upstream that cuts its own answer may say response.done before speech_started.
    const cut = S.cut;
    const r = S.response || cut;
    S.cut = null;
    if (r && (S.player.queuedMs > 0 || r.audioMs > 0)) {
      const detect = Math.round(performance.now() - capturedAt(onsetMs));
      view.log("speech_started", `over the answer at ${onsetMs} ms of input: detected in ${detect} ms, playback stopped`, "barge-in");
      r.bargeIn = r.bargeIn || { onsetMs, detect, at: capturedAt(onsetMs) };
      if (r === cut) bargeInDone(r, cut.doneAt);
    } else {
      view.log("speech_started", `at ${onsetMs} ms of input`, "vad");
    }
    S.player.flush();
    view.say("user", ev.item_id);
  },
  "input_audio_buffer.speech_stopped"(ev) {
    view.setVad(false);
    S.speechStoppedAt = performance.now(); // the end of the user's turn: first audio counts from here
    view.log("speech_stopped", `at ${ev.audio_end_ms} ms of input`, "vad");
  },
  "response.created"(ev) {
    S.cut = null;
    S.response = { id: ev.response.id, audioMs: 0, firstAudio: null, bargeIn: null };
    view.log("response.created", ev.response.id, "response");
  },
  "response.output_audio.delta"(ev) {
    const pcm = b64ToInt16(ev.delta);
    S.player.push(ev.item_id, ev.response_id, pcm);
    S.receivedMs += (pcm.length * 1000) / 24000;
    const r = S.response;
    if (r && r.firstAudio === null) {
      r.firstAudio = S.speechStoppedAt === null ? null : Math.round(performance.now() - S.speechStoppedAt);
      if (r.firstAudio !== null) S.firstAudioMs.push(r.firstAudio);
      S.speechStoppedAt = null; // one turn end, one first-audio latency
      view.log("first audio", r.firstAudio === null ? "" : `${r.firstAudio} ms after speech_stopped`, "response");
      view.setStat("firstAudio", r.firstAudio === null ? "–" : `${r.firstAudio} ms`);
    }
    if (r) r.audioMs += (pcm.length * 1000) / 24000;
  },
  "response.output_audio_transcript.delta"(ev) {
    view.say("assistant", ev.item_id).textContent += ev.delta;
  },
  "response.done"(ev) {
    const { status, status_details: details } = ev.response;
    const r = S.response;
    S.response = null;
    const reason = details && details.reason ? details.reason : "";
    view.log("response.done", `${status}${reason ? ` (${reason})` : ""}`, status === "completed" ? "response" : "barge-in");
    if (status === "cancelled") S.player.flush();
    if (!r) return;
    if (status === "cancelled" && r.bargeIn) bargeInDone(r, performance.now());
    else if (r.bargeIn) view.log("backchannel", "speech over the answer did not cut it: the answer went on", "vad");
    else if (status === "cancelled" && reason === "turn_detected") S.cut = Object.assign(r, { doneAt: performance.now() });
  },
  "conversation.item.truncated"(ev) {
    S.truncations.push(ev);
    const p = document.querySelector(`#transcript p[data-item="${ev.item_id}"]`);
    if (p) p.classList.add("cut");
    view.log("item.truncated", `${ev.item_id} at ${ev.audio_end_ms} ms (played here: ${S.played.get(ev.item_id) ?? 0} ms)`, "truncated");
  },
  "error"(ev) {
    const err = ev.error || {};
    S.errors.push(err);
    view.log("error", `${err.code || ""} ${err.message || ""}`, "error");
    if (String(err.code || "").startsWith("session_resume")) {
      S.sessionId = null; // the session is gone: start a new one
      S.ws.onclose = null;
      S.ws.close();
      freshSession();
      open(false);
    }
  },
};
handlers["response.audio.delta"] = handlers["response.output_audio.delta"];
handlers["response.audio_transcript.delta"] = handlers["response.output_audio_transcript.delta"];
function bargeInDone(r, doneAt) {
  const b = { ...r.bargeIn, cutMs: Math.round(doneAt - r.bargeIn.at) };
  S.bargeIns.push(b);
  view.setStat("bargeIns", S.bargeIns.length);
  view.log("barge-in", `answer cut: detected ${b.detect} ms, response cancelled ${b.cutMs} ms after speech onset`, "barge-in");
}

const QUIET = new Set(["playback.acknowledged", "response.audio.delta", "response.audio_transcript.delta", "response.output_audio.delta", "response.output_audio_transcript.delta"]);

function onEvent(ev) {
  S.events += 1;
  view.setStat("events", S.events);
  checkSeq(ev);
  const handle = handlers[ev.type];
  if (handle) handle(ev);
  else if (!QUIET.has(ev.type)) view.log(ev.type, ev.item_id || ev.response_id || "");
}

async function talk() {
  if (!$("key-label").hidden && !$("key").value.trim()) {
    view.log("key", "this proxy needs an API key: enter it first", "error");
    $("key").focus();
    return;
  }
  $("connect").disabled = true;
  view.resetClock();
  S.closing = false;
  freshSession();
  try {
    S.player = S.player || (await Player.create(onPlayback));
    S.capture = await startCapture({ echoCancellation: $("aec").checked, onFrame });
    view.log("microphone", `${S.capture.label || "default"} at ${S.capture.inputRate} Hz, echo cancellation ${S.capture.settings.echoCancellation ? "on" : "off"}`);
  } catch (e) {
    view.log("microphone", `unavailable: ${e}`, "error");
    $("connect").disabled = false;
    return;
  }
  open(false);
  $("drop").disabled = false;
  $("hangup").disabled = false;
}

async function hangup() {
  S.closing = true;
  send({ type: "session.close" });
  if (S.ws) S.ws.close();
  if (S.player) S.player.flush();
  if (S.capture) await S.capture.stop();
  S.capture = null;
  S.sessionId = null;
  $("connect").disabled = false;
  $("drop").disabled = true;
  $("hangup").disabled = true;
}

function drop() {
  if (!S.ws || !S.sessionId) return; // nothing to resume yet
  view.log("drop", `closing the socket after seq ${S.lastSeq}; resuming on a new one`, "resume");
  const ws = S.ws;
  S.ws = null; // its close is expected: no auto-resume from it
  S.ready = false;
  ws.close(4000, "dropped from the page");
  open(true);
}

async function loadRoutes() {
  const body = await (await fetch("/v1/routes")).json();
  $("key-label").hidden = !body.auth_required;
  const select = $("route");
  for (const r of body.routes) {
    const opt = document.createElement("option");
    opt.value = r.model;
    opt.textContent = `${r.model} (${r.mode})`;
    select.append(opt);
  }
  const first = body.default_model || (body.routes[0] && body.routes[0].model) || "";
  const pick = new URLSearchParams(location.search).get("model") || first;
  if ([...select.options].some((o) => o.value === pick)) select.value = pick;
  $("model").value = pick;
  select.onchange = () => ($("model").value = select.value);
}

$("connect").onclick = talk;
$("hangup").onclick = hangup;
$("drop").onclick = drop;
loadRoutes().catch((e) => view.log("routes", String(e), "error"));
