// The page's session with the proxy: its state, the socket, the resume after a drop,
// and the integrity of the server's event seqs (server_event_seq, session.resume:
// docs/protocol.md, "Resume").
import * as view from "./view.js";

const $ = (id) => document.getElementById(id);
export const FRAME_MS = 20;
const MAX_RETRIES = 5; // resumes in a row after the socket closed unasked
// What this page sends and plays: declared, so the proxy resamples whatever the upstream uses.
const PCM24 = { type: "audio/pcm", rate: 24000 };
const FORMATS = {
  type: "session.update",
  session: { type: "realtime", audio: { input: { format: PCM24 }, output: { format: PCM24 } } },
};

// Everything a test or a curious user may read from the console as `talk`.
export const S = (window.talk = {
  ws: null, ready: false, resuming: false, closing: false,
  sessionId: null, resumeToken: null, otherToken: null, mode: null, lastSeq: 0, events: 0, lost: 0, duplicated: 0, errors: [],
  sentMs: 0, receivedMs: 0, playedMs: 0, played: new Map(), frameTimes: [], pending: [],
  paddingMs: 0, response: null, speechStoppedAt: null, firstAudioMs: [], bargeIns: [],
  truncations: [], resumes: [], speechStarted: 0, capture: null, player: null, retries: 0, cut: null,
});

let dispatch = () => {};

// Who reads the server's events (one at a time, in order).
export function onServerEvent(fn) {
  dispatch = fn;
}

export function model() {
  return $("model").value.trim();
}

export function send(event) {
  if (S.ws && S.ws.readyState === WebSocket.OPEN) S.ws.send(JSON.stringify(event));
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
export function freshSession() {
  Object.assign(S, { lastSeq: 0, lost: 0, duplicated: 0, resumes: [], response: null, cut: null });
  Object.assign(S, { frameTimes: [], pending: [], sentMs: 0, speechStoppedAt: null, otherToken: null });
}

export function open(resume) {
  const ws = new WebSocket(url(), protocols());
  S.ws = ws;
  S.ready = false;
  S.resuming = resume; // a resume sent on this socket, not answered yet
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
  ws.onmessage = (m) => S.ws === ws && dispatch(JSON.parse(m.data));
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

// Leave the current socket without resuming from its close.
function leave() {
  const ws = S.ws;
  S.ws = null; // what it still says is not read
  S.ready = false;
  if (ws) {
    ws.onclose = null;
    ws.close();
  }
}

// Drop the session (it is gone) and start a new one on a new socket.
export function restart() {
  leave();
  S.sessionId = null;
  freshSession();
  open(false);
}

// Try the refused resume again on a new socket after a pause (given ?model=, the proxy
// carries on the refused one with a new session); after MAX_RETRIES, a new session.
export function retryResume() {
  if (S.retries++ >= MAX_RETRIES) return restart();
  leave();
  setTimeout(() => S.ws === null && !S.closing && open(true), 500 * S.retries);
}

export function checkSeq(ev) {
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

export function ready() {
  S.ready = true;
  S.resuming = false;
  S.retries = 0;
  view.setState("connected", true);
  for (const event of S.pending.splice(0)) {
    send(event);
    S.sentMs += FRAME_MS;
  }
}

// Capture time of input audio time `ms` (the proxy's audio_start_ms is on that clock).
export function capturedAt(ms) {
  const t = S.frameTimes[Math.max(0, Math.floor(ms / FRAME_MS))];
  return t === undefined ? performance.now() : t;
}
