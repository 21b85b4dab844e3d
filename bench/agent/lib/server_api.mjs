// The non-generating routes the instrument uses: /health, /v1/models, /tokenize and
// /apply-template (llama.cpp's shapes). A route the server does not have yet reads as null,
// so the report degrades to what the server can tell instead of failing.
export class ServerApi {
  constructor(baseUrl, apiKey) {
    this.baseUrl = baseUrl;
    this.headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  }

  async #post(route, body) {
    try {
      const res = await fetch(this.baseUrl + route, { method: 'POST', headers: this.headers,
        body: JSON.stringify(body) });
      return res.ok ? await res.json() : null;
    } catch {
      return null;
    }
  }

  async modelId() {
    try {
      const res = await fetch(`${this.baseUrl}/v1/models`, { headers: this.headers });
      return res.ok ? (await res.json()).data?.[0]?.id ?? null : null;
    } catch {
      return null;
    }
  }

  // Token ids of `text` (special tokens parsed, as the chat renderer's text is), or null.
  async tokenize(text) {
    const out = await this.#post('/tokenize', { content: text });
    return Array.isArray(out?.tokens) ? out.tokens.map((t) => (typeof t === 'object' ? t.id : t))
      : null;
  }

  // {prompt, tokens} of the rendered chat, or null.
  async applyTemplate(messages, tools, addGenerationPrompt, templateKwargs) {
    const body = { messages, add_generation_prompt: addGenerationPrompt };
    if (tools?.length) body.tools = tools;
    if (templateKwargs) body.chat_template_kwargs = templateKwargs;
    const out = await this.#post('/apply-template', body);
    if (!out || typeof out.prompt !== 'string') return null;
    return { prompt: out.prompt, tokens: out.tokens ?? await this.tokenize(out.prompt) };
  }
}
