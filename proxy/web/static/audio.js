// Microphone capture and assistant playback, both on AudioWorklets.
export const RATE = 24000;

// Start the microphone; onFrame(Int16Array of 20 ms at 24 kHz) for each frame.
export async function startCapture({ echoCancellation, onFrame }) {
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { echoCancellation, noiseSuppression: echoCancellation, autoGainControl: true, channelCount: 1 },
  });
  const ctx = new AudioContext();
  await ctx.audioWorklet.addModule("/web/capture-worklet.js");
  const source = ctx.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(ctx, "capture", { numberOfInputs: 1, numberOfOutputs: 0 });
  node.port.onmessage = (e) => onFrame(new Int16Array(e.data));
  source.connect(node);
  await ctx.resume();
  const track = stream.getAudioTracks()[0];
  return {
    label: track ? track.label : "",
    settings: track ? track.getSettings() : {},
    inputRate: ctx.sampleRate,
    async stop() {
      stream.getTracks().forEach((t) => t.stop());
      await ctx.close();
    },
  };
}

// Plays 24 kHz PCM16 chunks; onReport({type, item, response, playedMs, droppedMs, queuedMs})
// whenever the worklet reports where playback is ("position", "drained", "flushed").
export class Player {
  static async create(onReport) {
    const ctx = new AudioContext({ sampleRate: RATE });
    await ctx.audioWorklet.addModule("/web/playback-worklet.js");
    const node = new AudioWorkletNode(ctx, "playback", { numberOfInputs: 0, outputChannelCount: [1] });
    node.connect(ctx.destination);
    await ctx.resume();
    return new Player(ctx, node, onReport);
  }

  constructor(ctx, node, onReport) {
    this.ctx = ctx;
    this.node = node;
    this.queuedMs = 0;
    node.port.onmessage = (e) => {
      this.queuedMs = e.data.queuedMs;
      onReport(e.data);
    };
  }

  push(item, response, pcm16) {
    const samples = new Float32Array(pcm16.length);
    for (let i = 0; i < pcm16.length; i++) samples[i] = pcm16[i] / 0x8000;
    this.queuedMs += (samples.length * 1000) / RATE;
    this.node.port.postMessage({ type: "chunk", item, response, samples }, [samples.buffer]);
  }

  flush() {
    this.node.port.postMessage({ type: "flush" });
  }

  async close() {
    await this.ctx.close();
  }
}

export function b64ToInt16(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length & ~1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Int16Array(bytes.buffer);
}

export function int16ToB64(pcm) {
  const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}
