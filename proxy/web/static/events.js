// What the page does with each server event: the session's life, turns, the answer's
// audio and transcript, barge-ins and truncations, errors (GA Realtime events;
// docs/protocol.md). The session itself (state, socket, seqs) is session.js.
import { b64ToInt16 } from "./audio.js";
import { S, capturedAt, checkSeq, ready, restart, retryResume } from "./session.js";
import * as view from "./view.js";

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
    S.otherToken = null;
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
    const code = String(err.code || "");
    // upstream_unavailable before the resume was answered refused the resume.
    const upstream = code === "upstream_unavailable" && S.resuming;
    if (!code.startsWith("session_resume") && !upstream) return;
    if (code === "session_resume_unavailable" || upstream) {
      // Not lost: tried again (docs/protocol.md, "Resume"). A token given here is the
      // one the store may now hold: tried first, the page's own kept to try next.
      if (typeof ev.resume_token === "string" && ev.resume_token !== S.resumeToken) {
        [S.otherToken, S.resumeToken] = [S.resumeToken, ev.resume_token];
      }
      retryResume();
    } else if (code === "session_resume_denied" && S.otherToken) {
      [S.resumeToken, S.otherToken] = [S.otherToken, null];
      retryResume();
    } else {
      restart(); // the session is gone: start a new one
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

export function onEvent(ev) {
  S.events += 1;
  view.setStat("events", S.events);
  checkSeq(ev);
  const handle = handlers[ev.type];
  if (handle) handle(ev);
  else if (!QUIET.has(ev.type)) view.log(ev.type, ev.item_id || ev.response_id || "");
}
