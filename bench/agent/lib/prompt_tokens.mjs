// Token accounting per turn, from the server's own renderer and tokenizer: how many tokens of
// the prompt are new (the client's additions this turn), how many are the re-render of the
// previous reply (what the cache may have to prefill again when its idle pre-fill of the
// canonical history did not finish), and where the timestamp scenario's per-turn id sits.
//
// "New" is counted at message granularity: the prompt minus the longest rendered prefix that
// ends where the first message the client changed or added begins. An edited last user
// message is therefore new as a whole (its snapshot is at its start, user_start), and so is
// everything after a changed system prompt.

export function lcp(a, b) {
  let n = 0;
  const limit = Math.min(a.length, b.length);
  while (n < limit && a[n] === b[n]) n++;
  return n;
}

function sameMessage(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// First index where `messages` departs from `prior` (the previous request plus its reply).
export function firstChangedIndex(messages, prior) {
  let i = 0;
  while (i < messages.length && i < prior.length && sameMessage(messages[i], prior[i])) i++;
  return i;
}

// An empty message of the same role: rendering history + probe shows where message m starts.
function probeOf(message) {
  const probe = { role: message.role, content: '' };
  if (message.tool_call_id) probe.tool_call_id = message.tool_call_id;
  return probe;
}

// The probe shares the changed message's header with the prompt; the message starts at the
// header's first token, the last <|im_start|> before the shared run ends (ChatML templates).
function messageStart(ids, shared, headerId) {
  if (headerId === null) return shared;
  for (let i = Math.min(shared, ids.length) - 1; i >= 0; i--) if (ids[i] === headerId) return i;
  return 0;
}

async function headerTokenId(api) {
  api.headerId ??= await api.tokenize('<|im_start|>').then((t) => (t?.length === 1 ? t[0] : null));
  return api.headerId;
}

// turn: {messages, tools, kwargs}; prev: the previous turn with {messages, assistant, ids}.
// Returns {ids, promptTokens, newTokens, replySpan} (ids kept for the next turn) or null when
// the server cannot render templates.
export async function accountTurn(api, turn, prev) {
  const rendered = await api.applyTemplate(turn.messages, turn.tools, true, turn.kwargs);
  if (!rendered?.tokens) return null;
  const ids = rendered.tokens;
  const out = { ids, prompt: rendered.prompt, promptTokens: ids.length, newTokens: ids.length,
    replySpan: 0 };
  if (!prev?.ids) return out;
  const prior = [...prev.messages, prev.assistant];
  const m = firstChangedIndex(turn.messages, prior);
  let seen = ids.length;
  if (m === 0) {
    seen = 0;
  } else if (m < turn.messages.length) {
    const probe = [...turn.messages.slice(0, m), probeOf(turn.messages[m])];
    const probeIds = (await api.applyTemplate(probe, turn.tools, false, turn.kwargs))?.tokens;
    if (!probeIds) return null;
    seen = messageStart(ids, lcp(ids, probeIds), await headerTokenId(api));
  }
  out.newTokens = ids.length - seen;
  if (m > prev.messages.length) out.replySpan = Math.max(0, seen - lcp(ids, prev.ids));
  return out;
}

// The token span of `marker` in a rendered prompt: start (the first token that differs from
// the tokenization of the text before it) and an end bound.
export async function markerSpan(api, promptText, ids, marker) {
  const offset = promptText.indexOf(marker);
  if (offset < 0) return null;
  const before = await api.tokenize(promptText.slice(0, offset));
  const markerIds = await api.tokenize(marker);
  if (!before || !markerIds) return null;
  const start = lcp(ids, before);
  return { start, end: start + markerIds.length + 1 };
}
