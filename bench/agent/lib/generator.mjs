// SessionGenerator: a synthetic coding-agent session, deterministic from a seed. It decides
// the user and tool side only (the system prompt, a repository-sized first message, tool
// results of varied sizes, short follow-ups, regenerations); the assistant side is whatever
// the server returns, kept verbatim by the runner. Sizes are in tokens, converted to
// characters with a chars-per-token ratio measured on the server's tokenizer.
//
// Source interface (shared with TraceSource): first() and next(ctx) return a Step:
//   { system, keep, append, thinkTimeMs, interruptAfter, kind, marker }
// `keep` (optional) is how many history messages survive before `append` (a regeneration
// drops the tail); `interruptAfter` > 0 asks the runner to cut the stream after that many
// chunks; `marker` is the per-turn id text of the timestamp scenario.
import { Prng } from './prng.mjs';
import * as corpus from './corpus.mjs';
import { TOOL_SCHEMAS, toolResult, toolWeights, isSmallTool } from './tools.mjs';

const SYSTEM_INTRO =
  'You are an interactive coding agent working in the user\'s repository. You help with ' +
  'software engineering tasks: fixing bugs, adding features, refactoring, explaining code.';

const SYSTEM_RULES = [
  'Read the relevant code before proposing a change; never guess file contents.',
  'Prefer editing existing files to creating new ones. Keep diffs small and focused.',
  'Run the project\'s tests after every change and report failures verbatim.',
  'Use the todo_write tool to plan multi-step work and keep the list current.',
  'Never commit, push or rewrite history unless the user asks for it explicitly.',
  'When a command fails, read its output, form a hypothesis, and test it before retrying.',
  'Quote file paths with line numbers (path:line) so the user can jump to them.',
  'Keep answers short: the user reads them in a terminal.',
];

const FOLLOW_UPS = [
  'Now run the tests again and tell me what fails.',
  'Good. Can you also update the header comment to explain why?',
  'That looks wrong to me: the limit should apply per request, not per session.',
  'Please check the other call sites of this function as well.',
  'Ok, continue with the next item on the list.',
  'Can you make the error message name the file and the field?',
  'Revert the last edit and try a smaller change instead.',
];

const INTERRUPT_FOLLOW_UPS = [
  'Stop, that is not what I meant. Only change the parser, leave the writer alone.',
  'Wait, before you go on: use the existing helper instead of a new one.',
];

export class SessionGenerator {
  constructor(options) {
    this.o = {
      seed: 1, startTokens: 4000, targetTokens: 60000, turns: 30, maxTurns: 0,
      charsPerToken: 3.5, maxTokens: 256, thinkTimeMs: 0, timestamp: false,
      interruptEvery: 0, interruptAfter: 6, regenerateEvery: 0, toolCount: TOOL_SCHEMAS.length,
      ...options,
    };
    this.o.maxTurns ||= this.o.turns * 2 + 4;
    this.rng = new Prng(this.o.seed);
    this.systemRng = this.rng.fork();
    this.sizeRng = this.rng.fork();
    this.textRng = this.rng.fork();
    this.stepCount = 0;
    this.pendingRegenerate = false;
    this.tools = TOOL_SCHEMAS.slice(0, this.o.toolCount);
    this.systemBody = this.#buildSystemBody();
  }

  chars(tokens) {
    return Math.max(1, Math.round(tokens * this.o.charsPerToken));
  }

  tokens(text) {
    return Math.round(text.length / this.o.charsPerToken);
  }

  // The system prompt of step `index`; with --scenario timestamp it carries a per-turn id and
  // clock line near the top, as agents that print the date into the system prompt do.
  system(index) {
    if (!this.o.timestamp) return { text: `${SYSTEM_INTRO}\n\n${this.systemBody}` };
    const rng = new Prng(this.o.seed * 7919 + index);
    const marker = `req_${rng.hex(12)}`;
    const time = new Date(Date.UTC(2026, 0, 5, 9, 0, 0) + index * 37_000).toISOString();
    return {
      text: `${SYSTEM_INTRO}\n\nSession request id: ${marker}\nCurrent time: ${time}\n\n` +
        this.systemBody,
      marker,
    };
  }

  #buildSystemBody() {
    const budget = this.chars(Math.min(2500, Math.max(120, this.o.startTokens * 0.25)));
    const parts = ['# Rules', ...SYSTEM_RULES.map((r) => `- ${r}`), '', '# Project notes'];
    let text = parts.join('\n');
    while (text.length < budget) {
      text += `\n- ${corpus.prose(this.systemRng, 160)}`;
    }
    return text;
  }

  #firstUserMessage(systemText) {
    const overhead = this.tokens(systemText) + this.tokens(JSON.stringify(this.tools));
    const budget = this.chars(Math.max(60, this.o.startTokens - overhead));
    const rng = this.textRng;
    let text = 'I am working in this repository. Layout and the files you need:\n\n' +
      corpus.dirListing(rng, Math.min(1500, budget * 0.1)) + '\n';
    while (text.length < budget * 0.92) {
      const size = Math.min(budget - text.length, rng.int(800, 6000));
      text += `\n=== ${corpus.filePath(rng)} ===\n${corpus.sourceFile(rng, size)}\n`;
    }
    return text + `\nTask: the ${corpus.identifier(rng)} path drops entries under load. Find ` +
      'the cause, fix it, and add a regression test.';
  }

  // Tokens added per turn on average, so that the prompt grows from start to target in about
  // `turns` turns (the replies add up to max_tokens each, counted at half).
  #turnBudget() {
    const growth = (this.o.targetTokens - this.o.startTokens) / Math.max(1, this.o.turns);
    return Math.max(16, growth - this.o.maxTokens / 2);
  }

  // A size in tokens: log-normal with mean `mean`, so most results are small and a few are
  // thousands of tokens, as in real sessions.
  #size(mean, lo, hi) {
    const sigma = 1.3;
    const x = mean * Math.exp(sigma * this.sizeRng.gauss() - (sigma * sigma) / 2);
    return Math.round(Math.min(hi, Math.max(lo, x)));
  }

  first() {
    const system = this.system(0);
    this.stepCount = 1;
    return {
      kind: 'start', system: system.text, marker: system.marker,
      append: [{ role: 'user', content: this.#firstUserMessage(system.text) }],
      thinkTimeMs: 0, interruptAfter: 0,
    };
  }

  // ctx: { reply: {content, reasoning, toolCalls, interrupted}, history, promptTokens }
  next(ctx) {
    if (ctx.promptTokens >= this.o.targetTokens || this.stepCount >= this.o.maxTurns) {
      return null;
    }
    const index = this.stepCount++;
    const system = this.system(index);
    const step = {
      system: system.text, marker: system.marker, thinkTimeMs: this.o.thinkTimeMs,
      interruptAfter: this.o.interruptEvery > 0 && index % this.o.interruptEvery === 0
        ? this.o.interruptAfter : 0,
    };
    return { ...step, ...this.#nextMessages(ctx, index) };
  }

  #nextMessages(ctx, index) {
    if (this.pendingRegenerate) {
      this.pendingRegenerate = false;
      return this.#regenerate(ctx.history);
    }
    if (ctx.reply.interrupted) {
      return { kind: 'user', append: [{ role: 'user',
        content: this.textRng.pick(INTERRUPT_FOLLOW_UPS) }] };
    }
    if (this.o.regenerateEvery > 0 && index % this.o.regenerateEvery === 0) {
      this.pendingRegenerate = true;
      return this.#followUp();
    }
    if (ctx.reply.toolCalls.length > 0) return this.#answerCalls(ctx.reply.toolCalls);
    return this.rng.chance(0.7) ? this.#syntheticToolTurn(index) : this.#followUp();
  }

  #followUp() {
    const rng = this.textRng;
    let text = rng.pick(FOLLOW_UPS);
    if (rng.chance(0.4)) text += ' ' + corpus.prose(rng, this.chars(rng.int(10, 60)));
    return { kind: 'user', append: [{ role: 'user', content: text }] };
  }

  // The last user message re-sent with an edit, everything after it dropped (the client's
  // "edit and resend").
  #regenerate(history) {
    const last = history.findLastIndex((m) => m.role === 'user');
    const original = history[last].content;
    const edited = `${original} Actually, keep the public API unchanged and only touch ` +
      `${corpus.filePath(this.textRng)}.`;
    return { kind: 'regenerate', keep: last, append: [{ role: 'user', content: edited }] };
  }

  #answerCalls(calls) {
    const budget = this.#turnBudget() / calls.length;
    const append = calls.map((call) => ({
      role: 'tool', tool_call_id: call.id,
      content: toolResult(this.textRng, call.function?.name, this.chars(this.#size(budget, 4, 8000))),
    }));
    return { kind: 'tool', append };
  }

  // Tool results for calls the agent decided on (a random-weight model calls nothing). They
  // follow the reply as tool messages, as a client would append them.
  #syntheticToolTurn(index) {
    const count = this.rng.pick([1, 1, 1, 2, 3]);
    const budget = this.#turnBudget() / count;
    const append = [];
    for (let i = 0; i < count; i++) {
      const name = this.rng.weighted(toolWeights());
      const tokens = isSmallTool(name) ? this.#size(20, 4, 60) : this.#size(budget, 4, 8000);
      append.push({ role: 'tool', tool_call_id: `call_${index}_${i}`,
        content: toolResult(this.textRng, name, this.chars(tokens)) });
    }
    return { kind: 'tool', append };
  }
}
