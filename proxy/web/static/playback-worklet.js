// Assistant playback at 24 kHz. Counts the samples of each item actually rendered, so
// the page can tell the proxy what was heard (playback.ack), and drops everything
// queued at once on "flush" (barge-in).
const REPORT_EVERY = 2400; // samples (100 ms)

class PlaybackProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = []; // {item, response, data: Float32Array, off}
    this.played = new Map(); // item id -> samples rendered
    this.sinceReport = 0;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(msg) {
    if (msg.type === "chunk") {
      this.queue.push({ item: msg.item, response: msg.response, data: msg.samples, off: 0 });
    } else if (msg.type === "flush") {
      const head = this.queue[0];
      let dropped = 0;
      for (const c of this.queue) dropped += c.data.length - c.off;
      this.queue = [];
      if (head) this.report(head, "flushed", dropped);
    }
  }

  report(chunk, kind, dropped = 0) {
    this.sinceReport = 0;
    this.port.postMessage({
      type: kind,
      item: chunk.item,
      response: chunk.response,
      playedMs: Math.round(((this.played.get(chunk.item) || 0) * 1000) / sampleRate),
      droppedMs: Math.round((dropped * 1000) / sampleRate),
      queuedMs: Math.round((this.queuedSamples() * 1000) / sampleRate),
    });
  }

  queuedSamples() {
    let n = 0;
    for (const c of this.queue) n += c.data.length - c.off;
    return n;
  }

  process(_inputs, outputs) {
    const out = outputs[0];
    const n = out[0].length;
    let i = 0;
    while (i < n && this.queue.length > 0) {
      const c = this.queue[0];
      const take = Math.min(n - i, c.data.length - c.off);
      out[0].set(c.data.subarray(c.off, c.off + take), i);
      c.off += take;
      i += take;
      this.played.set(c.item, (this.played.get(c.item) || 0) + take);
      this.sinceReport += take;
      if (c.off >= c.data.length) {
        this.queue.shift();
        const next = this.queue[0];
        if (!next || next.item !== c.item) this.report(c, "drained");
      }
      if (this.sinceReport >= REPORT_EVERY && this.queue.length > 0) this.report(this.queue[0], "position");
    }
    out[0].fill(0, i);
    for (let ch = 1; ch < out.length; ch++) out[ch].set(out[0]);
    return true;
  }
}

registerProcessor("playback", PlaybackProcessor);
