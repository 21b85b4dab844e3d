// Deterministic tokenizer test corpus: thousands of strings covering the text a chat server
// sees (prose in several scripts, code, emoji, whitespace and number runs, special tokens in
// text, odd but valid Unicode, text needing NFC). Seeded PRNG, so every run and every
// machine builds the same corpus. Used by tokenizer_oracle.mjs and the tokenizer benchmark.

export function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  const pick = (list) => list[int(list.length)];
  return { next, int, pick };
}

const ENGLISH_WORDS = (
  "the of and to in is was he for it with as his on be at by I had not are but from or " +
  "have an they which one you were her all she there would their we him been has when who " +
  "will more no if out so said what up its about into than them can only other new some " +
  "could time these two may then do first any my now such like our over man me even most " +
  "made after also did many before must through back years where much your way well down " +
  "should because each just those people Mr how too little state good very make world still " +
  "own see men work long get here between both life being under never day same another know " +
  "while last might us great old year off come since against go came right used take three " +
  "tokenizer inference cache attention transformer recurrent gradient SSD throughput latency " +
  "QWEN Qwen3 GPT-4 HTTP/2 JSON UTF-8 naïve café résumé coöperate façade São Zürich"
).split(" ");
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE",
  "'M", "'LL", "'D", "'Ll", "n't", "N'T", "'ſ", "’s", "’ll"];
const PUNCT = [".", ",", "!", "?", ";", ":", "...", " -", " —", "\u2026", "?!", ".)", "\"", "'"];

const CHINESE = ["你好，世界。", "今天天气很好", "我们正在测试分词器", "机器学习是人工智能的一个分支",
  "缓存命中率提高了百分之三十", "请把文件保存到固态硬盘", "这是一个很长的句子，包含了逗号、顿号和句号。",
  "中华人民共和国", "繁體中文測試：臺灣、香港", "《红楼梦》是中国古典小说", "数字１２３和ＡＢＣ全角字符"];
const JAPANESE = ["こんにちは、世界！", "東京は日本の首都です。", "カタカナとひらがなの混在テキスト",
  "ｶﾀｶﾅ半角", "私は学生です。よろしくお願いします。", "「かぎかっこ」と『二重かぎ』", "ーッ！？",
  "漢字かな交じり文を正しく分割できるか"];
const KOREAN = ["안녕하세요, 세계!", "한국어 형태소 분석", "캐시가 디스크에 저장됩니다.",
  "대한민국의 수도는 서울입니다", "ㄱㄴㄷㄹ ㅏㅑㅓㅕ"];
const OTHER_SCRIPTS = ["Привет, мир! Съешь же ещё этих мягких французских булок.",
  "Γειά σου Κόσμε· ἀρχὴ ἥμισυ παντός", "مرحبا بالعالم، هذا اختبار", "שלום עולם, זה מבחן",
  "नमस्ते दुनिया, यह एक परीक्षण है", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง", "Xin chào thế giới, tiếng Việt có dấu",
  "Ṫḧïṡ ïṡ ẅëïṙḋ", "ქართული ენა", "Հայերեն լեզու", "ᚠᚢᚦᚨᚱᚲ runes", "𝐁𝐨𝐥𝐝 𝑰𝒕𝒂𝒍𝒊𝒄 𝔉𝔯𝔞𝔨𝔱𝔲𝔯"];

const CODE = [
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "import numpy as np\n\nclass Cache:\n\tdef __init__(self, size=1024):\n\t\tself.size = size  # bytes\n",
  "#include <vector>\n\nint main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n  for (auto& x : v) x *= 2;\n  return v.size() > 2 ? 0 : 1;\n}\n",
  "template <typename T>\nconstexpr T clamp(T x, T lo, T hi) noexcept { return x < lo ? lo : (x > hi ? hi : x); }\n",
  "const fetchData = async (url) => {\n  const res = await fetch(`${url}?q=${encodeURIComponent(q)}`);\n  return res.json();\n};\n",
  "export default function App() { return <div className=\"app\">{items.map(i => <Item key={i.id} {...i} />)}</div>; }\n",
  "fn main() -> Result<(), Box<dyn std::error::Error>> {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n    Ok(())\n}\n",
  "impl<'a> Iterator for Tokens<'a> {\n    type Item = &'a str;\n    fn next(&mut self) -> Option<Self::Item> { self.inner.next() }\n}\n",
  "#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n  wc -l \"$f\" | awk '{print $1}' >> counts.log 2>&1\ndone\n",
  "cat /etc/passwd | grep -E '^root:' && echo \"ok\" || exit 1 # comment\r\n",
  "{\"model\": \"qwen3\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"temperature\": 0.7, \"max_tokens\": 128}",
  "{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\",\n    \"unit\": null\n  }\n}",
  "SELECT id, name FROM users WHERE created_at >= '2024-01-01' ORDER BY id DESC LIMIT 10;",
  "<html>\n<body>\n<p class=\"x\">Hello &amp; welcome</p>\n</body>\n</html>",
  "    \t  mixed_indentation = True\t# trailing tab\t\n",
  "x+=1;y-=2;z*=3;w/=4;a%=5;b<<=1;c>>=2;d&=e|f^g;h=~i;j=!k&&l||m;",
  "0x7FFFFFFF 0b1010 1e-9 3.14159f 6.022e23 -0.0 1_000_000 0o777",
];
const EMOJI = ["🙂", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇯🇵🇺🇸", "🏴‍☠️", "❤️", "✋🏿", "1️⃣",
  "🧑🏻‍💻", "👩‍❤️‍💋‍👨", "🐱‍👤", "☺︎", "🤖🦀🐍", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🫠", "⌚⏰"];
const SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
  "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<|vision_start|>",
  "<|image_pad|>", "<|fim_prefix|>", "<|file_sep|>", "<|box_start|>"];
const NEAR_SPECIAL = ["<|im_start", "im_end|>", "<think", "</think", "<|>", "<||>", "< think>",
  "<THINK>", "<|IM_START|>", "<<|im_end|>>", "<|endoftext|", "<tool_call >"];
const ODD = ["\uFFFD", "\uFDD0", "\uFFFE", "\uFFFF", "\u{10FFFF}", "\u{1FFFE}", "\u{F0000}",
  "\uE000", "\uFEFF", "\u200B", "\u200C", "\u200D", "\u2060", "\uFE0F", "\u{E0100}",
  "\u0000", "\u0001", "\u001F", "\u007F", "\u0080", "\u0085", "\u009F", "\u00A0", "\u00AD",
  "\u2028", "\u2029", "\u3000", "\u180E", "\u{1D400}", "\u{20000}", "\u{2A6D6}", "\u{1F0A1}",
  "\u034F", "\u0301", "\u20DD", "\u{1F3FB}", "\u{E0041}", "\uD7FF", "\uE0FF", "\u{10000}"];
const NFC_NEEDED = ["e\u0301", "A\u030A", "\u212B", "\u2126", "\u1100\u1161\u11A8",
  "\u1112\u1161\u11AB\u1100\u1173\u11AF", "a\u0323\u0302", "a\u0302\u0323", "o\u0308\u0304",
  "\uF900\uF901", "\u0041\u0308\u0301", "\u00C5\u0301", "u\u0308", "n\u0303o", "\u0915\u093C",
  "\u30AB\u3099", "\u304B\u3099\u3057\u3099", "\u0627\u0653", "c\u0327", "\u1E0B\u0323",
  "\u0390", "\u03B9\u0308\u0301", "caf\u0065\u0301 na\u0131\u0308ve", "\u2000\u2001", "\u0344"];
const SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\t\t", "\u00A0", "\u3000",
  "\u2003", "\u0085", "\u2028", "\u000B", "\u000C"];

function whitespaceRun(rng, maxLength) {
  let s = "";
  const n = 1 + rng.int(maxLength);
  const alphabet = rng.next() < 0.5 ? [" "] : SPACES;
  for (let i = 0; i < n; i++) s += rng.pick(alphabet);
  return s;
}

function number(rng) {
  const kind = rng.int(8);
  const digits = (n) => Array.from({ length: n }, () => rng.int(10)).join("");
  if (kind === 0) return digits(1 + rng.int(40));
  if (kind === 1) return digits(1 + rng.int(4)) + "." + digits(1 + rng.int(6));
  if (kind === 2) return Number(digits(7)).toLocaleString("en-US");
  if (kind === 3) return "-" + digits(1 + rng.int(3)) + "e" + (rng.int(2) ? "+" : "-") + digits(2);
  if (kind === 4) return "٠١٢٣٤٥٦٧٨٩".slice(0, 1 + rng.int(9));
  if (kind === 5) return "１２３４５".slice(0, 1 + rng.int(5));
  if (kind === 6) return "½ ¾ ² ³ Ⅻ ⅷ";
  return "v" + digits(1) + "." + digits(2) + "." + digits(3);
}

function englishSentence(rng) {
  const n = 3 + rng.int(18);
  const words = [];
  for (let i = 0; i < n; i++) {
    let w = rng.pick(ENGLISH_WORDS);
    const r = rng.next();
    if (r < 0.08) w += rng.pick(CONTRACTIONS);
    else if (r < 0.12) w = w.toUpperCase();
    else if (r < 0.2) w = w[0].toUpperCase() + w.slice(1);
    else if (r < 0.25) w = number(rng);
    words.push(w);
  }
  return words.join(" ") + rng.pick(PUNCT);
}

function fragment(rng) {
  const kind = rng.int(14);
  switch (kind) {
    case 0: case 1: return englishSentence(rng);
    case 2: return rng.pick(CHINESE);
    case 3: return rng.pick(JAPANESE);
    case 4: return rng.pick(KOREAN);
    case 5: return rng.pick(OTHER_SCRIPTS);
    case 6: return rng.pick(CODE);
    case 7: return rng.pick(EMOJI);
    case 8: return whitespaceRun(rng, rng.next() < 0.2 ? 300 : 8);
    case 9: return number(rng);
    case 10: return rng.pick(SPECIAL);
    case 11: return rng.pick(NEAR_SPECIAL);
    case 12: return rng.pick(ODD);
    default: return rng.pick(NFC_NEEDED);
  }
}

// Random code points from blocks fully assigned since early Unicode versions, so every
// Unicode version involved (ICU, PCRE2, V8) classifies them alike.
const STABLE_RANGES = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x400, 0x4ff],
  [0x3041, 0x3096], [0x30a1, 0x30fa], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0x1f600, 0x1f64f],
  [0x2190, 0x21ff], [0x2200, 0x22ff], [0x0e01, 0x0e3a]];

function randomCodePoints(rng) {
  let s = "";
  const n = 1 + rng.int(30);
  for (let i = 0; i < n; i++) {
    const [lo, hi] = rng.pick(STABLE_RANGES);
    s += String.fromCodePoint(lo + rng.int(hi - lo + 1));
  }
  return s;
}

// Every fixed item alone and with the separators around it, then random mixtures.
export function buildCorpus(count = 2400, seed = 20240601) {
  const rng = makeRng(seed);
  const corpus = [];
  const fixed = [...CHINESE, ...JAPANESE, ...KOREAN, ...OTHER_SCRIPTS, ...CODE, ...EMOJI,
    ...SPECIAL, ...NEAR_SPECIAL, ...ODD, ...NFC_NEEDED, ...SPACES, ...CONTRACTIONS];
  for (const item of fixed) {
    corpus.push(item);
    corpus.push(rng.pick(SPACES) + item + rng.pick(SPACES) + englishSentence(rng));
  }
  for (const special of SPECIAL) {
    corpus.push(`${special}user\nHello${special}\n`);
    corpus.push(` ${special} `);
    corpus.push(`\n\n${special}\n\n`);
    corpus.push(`text${special}text${special}${special}`);
  }
  for (let n = 1; n <= 64; n *= 2) {
    corpus.push(" ".repeat(n), "\n".repeat(n), "\t".repeat(n), "\r\n".repeat(n),
      " ".repeat(n) + "x", "x" + " ".repeat(n), "1".repeat(n), "a".repeat(n), "!".repeat(n));
  }
  corpus.push("", "a", " a", "a ", "'s", "I'M", "don't", "y'all'd've", "12345678901234567890");
  while (corpus.length < count) {
    const r = rng.next();
    if (r < 0.15) {
      corpus.push(randomCodePoints(rng));
      continue;
    }
    const parts = 1 + rng.int(r < 0.9 ? 6 : 25);
    let s = "";
    for (let i = 0; i < parts; i++) {
      s += fragment(rng);
      if (rng.next() < 0.5) s += rng.pick(SPACES);
    }
    corpus.push(s);
  }
  return corpus;
}

// A benchmark document of about `bytes` UTF-8 bytes with a chat-like mix: mostly English
// prose, then code, CJK, other scripts, numbers and emoji (the corpus above over-weights the
// rare cases on purpose; a benchmark should not).
export function benchDocument(rng, bytes) {
  let doc = "";
  while (Buffer.byteLength(doc) < bytes) {
    const r = rng.next();
    if (r < 0.55) doc += englishSentence(rng) + (rng.next() < 0.15 ? "\n\n" : " ");
    else if (r < 0.75) doc += "\n" + rng.pick(CODE) + "\n";
    else if (r < 0.85) doc += rng.pick([...CHINESE, ...JAPANESE, ...KOREAN]);
    else if (r < 0.9) doc += rng.pick(OTHER_SCRIPTS) + " ";
    else if (r < 0.95) doc += number(rng) + " ";
    else doc += rng.pick(EMOJI) + " ";
  }
  return doc;
}
