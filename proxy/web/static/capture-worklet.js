// Microphone capture: resample the context's rate to 24 kHz and post PCM16 frames
// of 20 ms (480 samples) to the page, which sends them as input_audio_buffer.append.
const OUT_RATE = 24000;
const FRAME = 480;

class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.ratio = sampleRate / OUT_RATE; // input samples per output sample
    this.half = Math.max(this.ratio / 2, 0.5);
    this.pos = this.half; // next output sample's centre, in input samples of `buf`
    this.buf = new Float32Array(0);
    this.frame = new Int16Array(FRAME);
    this.filled = 0;
  }

  // One output sample at input position p: a box average over the ratio's window
  // (a cheap low-pass before decimation), or linear interpolation when upsampling.
  sampleAt(buf, p) {
    if (this.ratio <= 1) {
      const i = Math.floor(p);
      const f = p - i;
      return buf[i] * (1 - f) + buf[Math.min(i + 1, buf.length - 1)] * f;
    }
    const lo = Math.max(0, Math.ceil(p - this.half));
    const hi = Math.min(buf.length - 1, Math.floor(p + this.half));
    let sum = 0;
    for (let i = lo; i <= hi; i++) sum += buf[i];
    return hi >= lo ? sum / (hi - lo + 1) : 0;
  }

  process(inputs) {
    const input = inputs[0];
    if (!input || input.length === 0) return true;
    const ch = input[0];
    const buf = new Float32Array(this.buf.length + ch.length);
    buf.set(this.buf);
    buf.set(ch, this.buf.length);
    while (this.pos + this.half + 1 < buf.length) {
      const v = Math.max(-1, Math.min(1, this.sampleAt(buf, this.pos)));
      this.frame[this.filled++] = v < 0 ? v * 0x8000 : v * 0x7fff;
      if (this.filled === FRAME) {
        const out = this.frame.slice().buffer;
        this.port.postMessage(out, [out]);
        this.filled = 0;
      }
      this.pos += this.ratio;
    }
    const drop = Math.max(0, Math.floor(this.pos - this.half) - 1);
    this.buf = buf.slice(drop);
    this.pos -= drop;
    return true;
  }
}

registerProcessor("capture", CaptureProcessor);
