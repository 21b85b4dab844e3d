// A hand-written SVG chart (no dependencies): one column per run (cache on, cache off, ...),
// side by side, each with TTFT per turn on top and cached vs prefilled tokens per turn below.
// Both rows share their y scale across columns so the columns compare at a glance.

const PANEL_W = 460;
const PANEL_H = 200;
const MARGIN = { left: 64, right: 16, top: 46, gap: 70, bottom: 40 };
const COLORS = { ttft: '#4c72b0', cached: '#55a868', prefill: '#dd8452', miss: '#c44e52' };

function esc(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(value) {
  if (!(value > 0)) return 1;
  const exp = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= value) return m * exp;
  return 10 * exp;
}

function formatTick(v) {
  if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return `${+v.toFixed(1)}`;
}

function axes(x, y, yMax, unit, turns) {
  const out = [];
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    const yy = y + PANEL_H - f * PANEL_H;
    out.push(`<line x1="${x}" y1="${yy}" x2="${x + PANEL_W}" y2="${yy}" stroke="#ddd"/>`);
    out.push(`<text x="${x - 6}" y="${yy + 4}" text-anchor="end" font-size="11">` +
      `${formatTick(f * yMax)}</text>`);
  }
  out.push(`<text x="${x - 50}" y="${y - 8}" font-size="11" fill="#555">${esc(unit)}</text>`);
  const step = Math.max(1, Math.ceil(turns / 12));
  for (let t = 1; t <= turns; t += step) {
    const xx = x + ((t - 0.5) / turns) * PANEL_W;
    out.push(`<text x="${xx}" y="${y + PANEL_H + 14}" text-anchor="middle" font-size="10">${t}</text>`);
  }
  out.push(`<text x="${x + PANEL_W / 2}" y="${y + PANEL_H + 28}" text-anchor="middle" ` +
    'font-size="11" fill="#555">turn</text>');
  return out;
}

function bar(x, y, w, h, color, title) {
  return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(0.5, w).toFixed(1)}" ` +
    `height="${Math.max(0, h).toFixed(1)}" fill="${color}"><title>${esc(title)}</title></rect>`;
}

function ttftPanel(rows, x, y, yMax, turns) {
  const out = axes(x, y, yMax, 'TTFT ms', turns);
  const w = PANEL_W / turns;
  for (const r of rows) {
    if (r.ttftMs === null || r.ttftMs === undefined) continue;
    const h = (r.ttftMs / yMax) * PANEL_H;
    const color = r.status === 'MISS' && r.turn > 1 ? COLORS.miss : COLORS.ttft;
    out.push(bar(x + (r.turn - 1) * w + w * 0.15, y + PANEL_H - h, w * 0.7, h, color,
      `turn ${r.turn}: TTFT ${r.ttftMs.toFixed(1)} ms, ${r.status}`));
  }
  return out;
}

function tokenPanel(rows, x, y, yMax, turns) {
  const out = axes(x, y, yMax, 'tokens', turns);
  const w = PANEL_W / turns;
  for (const r of rows) {
    const cached = r.cached ?? 0;
    const prefill = r.prefill ?? 0;
    const hc = (cached / yMax) * PANEL_H;
    const hp = (prefill / yMax) * PANEL_H;
    const bx = x + (r.turn - 1) * w + w * 0.15;
    out.push(bar(bx, y + PANEL_H - hc, w * 0.7, hc, COLORS.cached, `turn ${r.turn}: cached ${cached}`));
    out.push(bar(bx, y + PANEL_H - hc - hp, w * 0.7, hp, COLORS.prefill,
      `turn ${r.turn}: prefilled ${prefill}`));
  }
  return out;
}

function legend(x, y) {
  const items = [['TTFT', COLORS.ttft], ['TTFT (miss)', COLORS.miss], ['cached', COLORS.cached],
    ['prefilled', COLORS.prefill]];
  return items.map(([label, color], i) => `<rect x="${x + i * 110}" y="${y - 9}" width="10" ` +
    `height="10" fill="${color}"/><text x="${x + i * 110 + 14}" y="${y}" font-size="11">${label}</text>`);
}

// runs: [{label, rows}]
export function renderChart(title, runs) {
  const turns = Math.max(1, ...runs.map((r) => r.rows.length));
  const ttftMax = niceMax(Math.max(0, ...runs.flatMap((r) => r.rows.map((x) => x.ttftMs ?? 0))));
  const tokMax = niceMax(Math.max(0, ...runs.flatMap((r) =>
    r.rows.map((x) => (x.cached ?? 0) + (x.prefill ?? 0)))));
  const colW = MARGIN.left + PANEL_W + MARGIN.right;
  const width = colW * runs.length;
  const height = MARGIN.top + 2 * PANEL_H + MARGIN.gap + MARGIN.bottom + 20;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
  `<rect width="${width}" height="${height}" fill="white"/>`,
  `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ...legend(MARGIN.left, height - 8)];
  runs.forEach((run, i) => {
    const x = i * colW + MARGIN.left;
    parts.push(`<text x="${x + PANEL_W / 2}" y="36" text-anchor="middle" font-size="13">${esc(run.label)}</text>`);
    parts.push(...ttftPanel(run.rows.filter((r) => !r.error), x, MARGIN.top, ttftMax, turns));
    parts.push(...tokenPanel(run.rows.filter((r) => !r.error), x,
      MARGIN.top + PANEL_H + MARGIN.gap, tokMax, turns));
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
