// The four real coding agents as the tests and the bench run them: how each is configured
// against a local `qmlx serve` (the settings README.md's "Use it with your agent" gives users,
// plus every switch the client has for telemetry, update checks and other traffic), how it is run headless for a
// first turn and for a continued one, and the tool call the scripted model makes in its own
// tool vocabulary (a shell command that writes a file the test then reads).
import fs from "node:fs";
import path from "node:path";

export const FILE_NAME = "out.txt";
export const FILE_TEXT = "qmlx-agent-e2e";
const COMMAND = `echo ${FILE_TEXT} > ${FILE_NAME}`;
export const FINAL_ANSWER = `Done: ${FILE_NAME} holds ${FILE_TEXT}.`;
export const MODEL_ID = "qmlx-fixture";

// The qwen3_5 template opens <think> in the generation prompt, so both scripts start inside the
// reasoning. `parameters` are the client's own tool's arguments, in the Qwen 3.5 XML format.
function toolCallScript(tool, parameters) {
  const params = Object.entries(parameters)
    .map(([name, value]) => `<parameter=${name}>\n${value}\n</parameter>\n`).join("");
  return `I will run the command with the ${tool} tool.\n</think>\n\n<tool_call>\n` +
    `<function=${tool}>\n${params}</function>\n</tool_call>`;
}
const AFTER_TOOL_SCRIPT = `The command ran.\n</think>\n\n${FINAL_ANSWER}`;

const writeJson = (file, value) => {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + "\n");
};

export const CLIENTS = {
  // Qwen Code: the OpenAI env vars; settings.json turns off usage statistics, telemetry and the
  // update check. --yolo: headless runs get the shell tool only with every action approved.
  qwen: {
    bin: "qwen",
    script: toolCallScript("run_shell_command", { command: COMMAND }),
    configure({ home, baseUrl }) {
      writeJson(path.join(home, ".qwen", "settings.json"), {
        security: { auth: { selectedType: "openai" } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false, disableUpdateNag: true },
      });
      return { OPENAI_BASE_URL: `${baseUrl}/v1`, OPENAI_API_KEY: "qmlx", OPENAI_MODEL: MODEL_ID,
        QWEN_CODE_SUPPRESS_YOLO_WARNING: "1" };
    },
    turn: (prompt, { resume }) => [...(resume ? ["--continue"] : []), "--yolo",
      "--output-format", "stream-json", "--include-partial-messages", "-p", prompt],
  },

  // opencode: a provider in opencode.json through the bundled @ai-sdk/openai-compatible;
  // autoupdate and sharing off, models.dev and LSP downloads off by env. At every start opencode
  // also npm-installs @opencode-ai/plugin into its config folder unless that folder's
  // package-lock.json already lists it (no switch turns this off); the stub below says so, so
  // nothing is fetched. The plugin only serves user-written plugins.
  opencode: {
    bin: "opencode",
    script: toolCallScript("bash", { command: COMMAND, description: "Write out.txt" }),
    configure({ home, project, baseUrl }) {
      const configDir = path.join(home, ".config", "opencode");
      const plugin = { "@opencode-ai/plugin": "*" };
      fs.mkdirSync(path.join(configDir, "node_modules"), { recursive: true });
      writeJson(path.join(configDir, "package.json"), { dependencies: plugin });
      writeJson(path.join(configDir, "package-lock.json"),
        { lockfileVersion: 3, packages: { "": { dependencies: plugin } } });
      writeJson(path.join(project, "opencode.json"), {
        $schema: "https://opencode.ai/config.json",
        provider: {
          qmlx: {
            npm: "@ai-sdk/openai-compatible",
            name: "qmlx (local)",
            options: { baseURL: `${baseUrl}/v1`, apiKey: "qmlx" },
            models: { [MODEL_ID]: { name: "qmlx", tool_call: true } },
          },
        },
        model: `qmlx/${MODEL_ID}`,
        small_model: `qmlx/${MODEL_ID}`,
        autoupdate: false,
        share: "disabled",
        permission: { bash: "allow", edit: "allow" },
      });
      return { OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_LSP_DOWNLOAD: "1", OPENCODE_DISABLE_SHARE: "1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS: "1" };
    },
    turn: (prompt, { resume }) => ["run", ...(resume ? ["--continue"] : []), "--format", "json",
      prompt],
  },

  // Claude Code: the Anthropic env vars, every non-essential request off. --allowedTools, not
  // --dangerously-skip-permissions, which Claude Code refuses as root (CI, containers).
  claude: {
    bin: "claude",
    script: toolCallScript("Bash", { command: COMMAND, description: "Write out.txt" }),
    configure({ baseUrl }) {
      return { ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: "qmlx", ANTHROPIC_MODEL: MODEL_ID,
        ANTHROPIC_SMALL_FAST_MODEL: MODEL_ID, ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL_ID,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_BUG_COMMAND: "1" };
    },
    turn: (prompt, { resume }) => [...(resume ? ["--continue"] : []), "-p", prompt,
      "--output-format", "stream-json", "--verbose", "--include-partial-messages",
      "--allowedTools", "Bash"],
  },

  // Codex: a custom model provider on the Responses wire in $CODEX_HOME/config.toml; update
  // check, analytics, feedback and OpenTelemetry off, and the features that fetch from GitHub
  // and chatgpt.com at start-up (plugin sync, apps, model discovery).
  codex: {
    bin: "codex",
    script: toolCallScript("exec_command", { cmd: COMMAND }),
    configure({ home, baseUrl }) {
      const codexHome = path.join(home, ".codex");
      fs.mkdirSync(codexHome, { recursive: true });
      fs.writeFileSync(path.join(codexHome, "config.toml"), [
        `model = "${MODEL_ID}"`,
        `model_provider = "qmlx"`,
        `check_for_update_on_startup = false`,
        ``,
        `[model_providers.qmlx]`,
        `name = "qmlx"`,
        `base_url = "${baseUrl}/v1"`,
        `wire_api = "responses"`,
        `env_key = "QMLX_API_KEY"`,
        ``,
        `[analytics]`,
        `enabled = false`,
        ``,
        `[feedback]`,
        `enabled = false`,
        ``,
        `[otel]`,
        `exporter = "none"`,
        ``,
        `[features]`,
        `plugins = false`,
        `remote_plugin = false`,
        `apps = false`,
        `api_key_model_discovery = false`,
        ``,
      ].join("\n"));
      return { CODEX_HOME: codexHome, QMLX_API_KEY: "qmlx" };
    },
    turn: (prompt, { resume }) => ["exec", ...(resume ? ["resume", "--last"] : []),
      "--skip-git-repo-check", "--json", "--dangerously-bypass-approvals-and-sandbox", prompt],
  },
};

// Cline's CLI (npm `cline`; not pinned in tests/agents, so not in CI: run agent_e2e.mjs with its
// node_modules by hand). Its OpenAI Compatible provider as `cline auth -p openai -k KEY -m MODEL
// -b URL` writes it; a run continues a session by its id (`cline history` lists them).
CLIENTS.cline = {
  bin: "cline",
  script: toolCallScript("run_commands", { commands: JSON.stringify([COMMAND]) }),
  configure({ home, baseUrl }) {
    writeJson(path.join(home, ".cline", "data", "settings", "providers.json"), {
      version: 1,
      lastUsedProvider: "openai-compatible",
      modes: {},
      providers: { "openai-compatible": { settings: { provider: "openai-compatible",
        apiKey: "qmlx", model: MODEL_ID, baseUrl: `${baseUrl}/v1` },
      updatedAt: new Date().toISOString(), tokenSource: "manual" } },
    });
    return { CLINE_NO_AUTO_UPDATE: "1", CLINE_NO_INTERACTIVE: "1" };
  },
  turn: (prompt, { resume, home }) => [...(resume ? ["--id", latestClineSession(home)] : []),
    "--json", prompt],
};

function latestClineSession(home) {
  const dir = path.join(home, ".cline", "data", "sessions");
  return fs.readdirSync(dir).sort().at(-1);
}

export { AFTER_TOOL_SCRIPT };
