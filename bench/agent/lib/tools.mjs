// The dozen tools of a typical coding agent (schemas in OpenAI function form, as Claude Code,
// Codex, Cline and Qwen Code send them every turn), each with the kind of result it returns
// and that result's usual size class. The schemas are part of every prompt, so they are part of
// the cached prefix; the results are the bulk of what a session adds turn by turn.
import * as corpus from './corpus.mjs';

function tool(name, description, properties, required) {
  return {
    type: 'function',
    function: {
      name,
      description,
      parameters: { type: 'object', properties, required },
    },
  };
}

const str = (description) => ({ type: 'string', description });
const int = (description) => ({ type: 'integer', description });

export const TOOL_SCHEMAS = [
  tool('read_file', 'Read a file from the workspace. Returns numbered lines. Use offset and ' +
    'limit for large files.', { path: str('Path relative to the workspace root'),
    offset: int('First line (1-based)'), limit: int('Number of lines') }, ['path']),
  tool('write_file', 'Create or overwrite a file with the given content.',
    { path: str('Path relative to the workspace root'), content: str('Full file content') },
    ['path', 'content']),
  tool('edit', 'Replace an exact string in a file. old_string must be unique in the file.',
    { path: str('File to edit'), old_string: str('Text to replace'),
      new_string: str('Replacement text') }, ['path', 'old_string', 'new_string']),
  tool('bash', 'Run a shell command in the workspace and return stdout, stderr and the exit ' +
    'code. Long-running commands time out after 10 minutes.',
    { command: str('The command line'), timeout_ms: int('Timeout in milliseconds') },
    ['command']),
  tool('grep', 'Search file contents with a regular expression (ripgrep syntax).',
    { pattern: str('Regular expression'), path: str('Folder or file to search'),
      glob: str('Only files matching this glob') }, ['pattern']),
  tool('glob', 'List files matching a glob pattern, newest first.',
    { pattern: str('Glob, e.g. src/**/*.cpp') }, ['pattern']),
  tool('list_dir', 'List a directory with sizes.', { path: str('Directory') }, ['path']),
  tool('web_fetch', 'Fetch a URL and return its content converted to Markdown.',
    { url: str('Absolute URL'), prompt: str('What to extract') }, ['url']),
  tool('web_search', 'Search the web and return the top results with snippets.',
    { query: str('Search query') }, ['query']),
  tool('todo_write', 'Replace the session todo list.',
    { todos: { type: 'array', items: { type: 'object', properties: {
      content: str('Task'), status: { type: 'string', enum: ['pending', 'in_progress',
        'completed'] } }, required: ['content', 'status'] } } }, ['todos']),
  tool('task', 'Launch a sub-agent for a self-contained task and return its final report.',
    { description: str('Short title'), prompt: str('Full instructions') },
    ['description', 'prompt']),
  tool('ask_user', 'Ask the user a clarifying question and wait for the answer.',
    { question: str('The question') }, ['question']),
];

// Per tool: how often an agent calls it, whether its result is small (a confirmation) or
// sized by the session's budget, and how the result text is made.
export const TOOL_RESULTS = {
  read_file: { weight: 5, small: false, make: corpus.numberedFile },
  grep: { weight: 3, small: false, make: corpus.grepOutput },
  bash: { weight: 4, small: false,
    make: (rng, chars) => (rng.chance(0.5) ? corpus.testLog(rng, chars)
      : corpus.buildLog(rng, chars)) + `\n[exit code ${rng.pick([0, 0, 0, 1, 2])}]` },
  glob: { weight: 1, small: false, make: corpus.pathList },
  list_dir: { weight: 1, small: false, make: corpus.dirListing },
  web_fetch: { weight: 1, small: false, make: corpus.webPage },
  web_search: { weight: 1, small: false, make: corpus.webPage },
  task: { weight: 1, small: false, make: corpus.prose },
  edit: { weight: 3, small: true,
    make: (rng, chars) => `The file ${corpus.filePath(rng)} has been updated.` +
      (chars > 200 ? '\n' + corpus.diffHunk(rng, chars) : '') },
  write_file: { weight: 1, small: true,
    make: (rng) => `File created successfully at ${corpus.filePath(rng)}` },
  todo_write: { weight: 1, small: true,
    make: () => 'Todos have been modified successfully.' },
  ask_user: { weight: 0.3, small: true, make: (rng, chars) => corpus.prose(rng, chars) },
};

export function toolWeights() {
  return Object.fromEntries(Object.entries(TOOL_RESULTS).map(([k, v]) => [k, v.weight]));
}

// The result text of one call of `name` (an unknown name, e.g. a model's invention, reads
// like a shell command's output).
export function toolResult(rng, name, chars) {
  const spec = TOOL_RESULTS[name] ?? TOOL_RESULTS.bash;
  return spec.make(rng, spec.small ? Math.min(chars, 240) : chars);
}

export function isSmallTool(name) {
  return TOOL_RESULTS[name]?.small ?? false;
}
