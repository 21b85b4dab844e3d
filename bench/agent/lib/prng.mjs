// A small seeded PRNG (mulberry32) so that a session generated from a seed is the same on every
// machine and every Node version: Math.random cannot be seeded, and the cache-on and cache-off
// runs of a scenario must send byte-identical user and tool messages.

export class Prng {
  constructor(seed) {
    this.state = (Number(seed) >>> 0) ^ 0x9e3779b9;
  }

  // Uniform in [0, 1).
  next() {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  // Uniform integer in [lo, hi].
  int(lo, hi) {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p) {
    return this.next() < p;
  }

  pick(items) {
    return items[Math.floor(this.next() * items.length)];
  }

  // Picks a key of `weights` ({key: weight}) with probability proportional to its weight.
  weighted(weights) {
    const entries = Object.entries(weights);
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let x = this.next() * total;
    for (const [key, w] of entries) {
      x -= w;
      if (x < 0) return key;
    }
    return entries[entries.length - 1][0];
  }

  // Standard normal (Box-Muller).
  gauss() {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  hex(digits) {
    let out = '';
    for (let i = 0; i < digits; i++) out += '0123456789abcdef'[this.int(0, 15)];
    return out;
  }

  // An independent stream derived from this one, so that adding draws to one part of the
  // generator does not shift every later draw of another part.
  fork() {
    return new Prng(Math.floor(this.next() * 4294967296));
  }
}
