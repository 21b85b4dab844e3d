// Synthetic coding-agent text: source files, grep hits, build and test logs, directory
// listings, web pages. What matters for the cache is realistic *shape* (line structure, sizes
// from a few tokens to thousands, code-like token statistics), not meaning, so the text is
// assembled from word lists by a seeded PRNG and is identical for identical seeds.

const WORDS = [
  'cache', 'snapshot', 'chunk', 'token', 'prefix', 'restore', 'writer', 'index', 'session',
  'request', 'handler', 'buffer', 'stream', 'config', 'layer', 'state', 'model', 'router',
  'parser', 'render', 'queue', 'worker', 'metric', 'guard', 'store', 'reader', 'entry',
  'offset', 'length', 'result', 'error', 'status', 'option', 'policy', 'budget', 'window',
];
const VERBS = ['load', 'save', 'parse', 'build', 'find', 'merge', 'flush', 'check', 'apply',
  'encode', 'decode', 'insert', 'remove', 'update', 'compute', 'resolve', 'emit', 'read'];
const TYPES = ['int', 'size_t', 'bool', 'std::string', 'Status', 'double', 'uint64_t'];
const DIRS = ['src', 'src/core', 'src/net', 'src/util', 'lib', 'tests', 'tools', 'docs'];
const EXTS = ['.cpp', '.h', '.py', '.ts', '.go', '.rs'];
const PROSE = [
  'The function returns early when the buffer is empty.',
  'This path is taken only after the writer has flushed its queue.',
  'Callers must hold the lock while the index is being rebuilt.',
  'A failed check falls back to the slow path and records the reason.',
  'We keep the old behaviour behind a flag until the migration finishes.',
  'The benchmark numbers below were measured on a warm page cache.',
  'Each entry is immutable once written, so readers never need a lock.',
  'See the design notes for why the limit is enforced at admission time.',
];

function camel(rng) {
  const a = rng.pick(VERBS);
  const b = rng.pick(WORDS);
  return a + b[0].toUpperCase() + b.slice(1);
}

function snake(rng) {
  return `${rng.pick(WORDS)}_${rng.pick(WORDS)}`;
}

export function filePath(rng) {
  return `${rng.pick(DIRS)}/${snake(rng)}${rng.pick(EXTS)}`;
}

function codeLine(rng, depth) {
  const indent = '  '.repeat(depth);
  switch (rng.int(0, 7)) {
    case 0: return `${indent}${rng.pick(TYPES)} ${snake(rng)} = ${camel(rng)}(${snake(rng)});`;
    case 1: return `${indent}if (!${snake(rng)}.ok()) return ${snake(rng)}.status();`;
    case 2: return `${indent}for (size_t i = 0; i < ${snake(rng)}.size(); ++i) {`;
    case 3: return `${indent}// ${rng.pick(PROSE)}`;
    case 4: return `${indent}${snake(rng)}.${camel(rng)}(${rng.int(0, 4096)}, ${snake(rng)});`;
    case 5: return `${indent}}`;
    case 6: return `${indent}return ${camel(rng)}(${snake(rng)}, ${rng.int(1, 64)});`;
    default: return '';
  }
}

// Lines appended until the text reaches `chars` characters (at least one line).
function fill(chars, makeLine) {
  const lines = [];
  let size = 0;
  for (let i = 0; size < chars || lines.length === 0; i++) {
    const line = makeLine(i);
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

export function sourceFile(rng, chars) {
  return fill(chars, () => codeLine(rng, rng.int(0, 3)));
}

// `cat -n`-style numbered file contents, as read_file tools return them.
export function numberedFile(rng, chars) {
  return fill(chars, (i) => `${String(i + 1).padStart(6)}\t${codeLine(rng, rng.int(0, 3))}`);
}

export function grepOutput(rng, chars) {
  return fill(chars, () => `${filePath(rng)}:${rng.int(1, 2000)}:  ${codeLine(rng, 0)}`);
}

export function pathList(rng, chars) {
  return fill(chars, () => filePath(rng));
}

export function dirListing(rng, chars) {
  return fill(chars, () => {
    const dir = rng.chance(0.3);
    const size = String(rng.int(0, 90000)).padStart(6);
    return `${dir ? 'd' : '-'}rw-r--r--  ${size}  ${dir ? rng.pick(DIRS) + '/' : filePath(rng)}`;
  });
}

export function testLog(rng, chars) {
  return fill(chars, (i) => {
    const test = `${camel(rng)}Test.${camel(rng)}`;
    if (i % 3 === 0) return `[ RUN      ] ${test}`;
    if (rng.chance(0.08)) {
      return `${filePath(rng)}:${rng.int(1, 900)}: Failure\nExpected: ${snake(rng)} == ${rng.int(0, 99)}\n  Actual: ${rng.int(100, 999)}\n[  FAILED  ] ${test} (${rng.int(0, 40)} ms)`;
    }
    return `[       OK ] ${test} (${rng.int(0, 40)} ms)`;
  });
}

export function buildLog(rng, chars) {
  return fill(chars, (i) => {
    if (rng.chance(0.06)) {
      return `${filePath(rng)}:${rng.int(1, 900)}:${rng.int(1, 80)}: warning: unused variable '${snake(rng)}' [-Wunused-variable]`;
    }
    return `[${i + 1}/${i + 40}] Building CXX object CMakeFiles/${snake(rng)}.dir/${filePath(rng)}.o`;
  });
}

export function webPage(rng, chars) {
  return fill(chars, (i) => (i % 6 === 0 ? `## ${camel(rng)} ${rng.pick(WORDS)}` : rng.pick(PROSE)));
}

export function diffHunk(rng, chars) {
  const path = filePath(rng);
  return `--- a/${path}\n+++ b/${path}\n@@ -${rng.int(1, 500)},6 +${rng.int(1, 500)},7 @@\n` +
    fill(chars, () => `${rng.pick([' ', ' ', '-', '+'])}${codeLine(rng, 1)}`);
}

export function prose(rng, chars) {
  return fill(chars, () => rng.pick(PROSE)).replace(/\n/g, ' ');
}

export function identifier(rng) {
  return camel(rng);
}
