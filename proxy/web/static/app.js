// Talk to the proxy: microphone in, assistant out, and a live view of the session.
// Protocol: docs in README.md (GA Realtime events, server_event_seq, session.resume,
// playback.ack, capabilities.proxy). The session is session.js, its events events.js.
import { Player, int16ToB64, startCapture } from "./audio.js";
import { onEvent } from "./events.js";
import { FRAME_MS, S, freshSession, onServerEvent, open, send } from "./session.js";
import * as view from "./view.js";

const $ = (id) => document.getElementById(id);
const MAX_PENDING = 1500; // frames held while not connected (30 s)

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

onServerEvent(onEvent);
$("connect").onclick = talk;
$("hangup").onclick = hangup;
$("drop").onclick = drop;
loadRoutes().catch((e) => view.log("routes", String(e), "error"));
