// ManagedServer: starts, stops and restarts `qmlx serve` for a run (the restart scenario needs
// it, and cache on vs off needs two configurations), on free ports, with the cache_config.json
// written for the run and each process's stderr captured to its own log file (uids restart at
// 1 in a new process, so a log file is one process).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// Does this qmlx binary have the `serve` command? (It answers --help with 0 when it does.)
export function hasServe(bin) {
  return new Promise((resolve) => {
    const child = spawn(bin, ['serve', '--help'], { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('exit', (code) => resolve(code === 0));
  });
}

function tail(file, lines = 30) {
  if (!fs.existsSync(file)) return '';
  return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

export class ManagedServer {
  // options: { bin, model, configPath, logDir, name, diskKvRestore, extraArgs, startTimeoutMs }
  constructor(options) {
    this.o = options;
    this.child = null;
    this.epoch = 0;
    this.logPath = null;
    this.writtenBeforeRestarts = 0;  // storage bytes written by earlier processes of this run
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  get metricsUrl() {
    return `http://127.0.0.1:${this.metricsPort}/metrics`;
  }

  async start() {
    this.port = await freePort();
    this.metricsPort = await freePort();
    this.epoch++;
    this.logPath = path.join(this.o.logDir, `${this.o.name}.server${this.epoch}.log`);
    const args = ['serve', ...(this.o.model ? ['--model', this.o.model] : []), '--host', '127.0.0.1',
      '--port', String(this.port), '--metrics-port', String(this.metricsPort),
      '--cache-config', this.o.configPath, ...(this.o.diskKvRestore ? ['--disk-kv-restore'] : []),
      ...(this.o.extraArgs ?? [])];
    const log = fs.openSync(this.logPath, 'w');
    fs.writeSync(log, `# ${this.o.bin} ${args.join(' ')}\n`);
    this.child = spawn(this.o.bin, args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => {
      this.child = null;
      resolve({ code, signal });
    }));
    await this.#waitHealthy();
  }

  async #waitHealthy() {
    const deadline = Date.now() + (this.o.startTimeoutMs ?? 120_000);
    while (Date.now() < deadline) {
      if (!this.child) {
        throw new Error(`qmlx serve exited during start-up; log ${this.logPath}:\n` +
          tail(this.logPath));
      }
      try {
        const res = await fetch(`${this.url}/health`);
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await this.stop();
    throw new Error(`qmlx serve not healthy in time; log ${this.logPath}:\n${tail(this.logPath)}`);
  }

  // SIGTERM (the server flushes its cache queue), SIGKILL after a grace period.
  async stop(graceMs = 15_000) {
    if (!this.child) return null;
    const child = this.child;
    this.writtenBeforeRestarts += this.#processWriteBytes() ?? 0;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const status = await this.exited;
    clearTimeout(timer);
    return status;
  }

  async restart() {
    await this.stop();
    await this.start();
  }

  // Bytes this run's processes wrote to storage so far (Linux /proc/<pid>/io), or null. The
  // last process is sampled before its shutdown flush.
  writeBytes() {
    const current = this.#processWriteBytes();
    return current === null ? null : this.writtenBeforeRestarts + current;
  }

  #processWriteBytes() {
    if (!this.child) return null;
    try {
      const io = fs.readFileSync(`/proc/${this.child.pid}/io`, 'utf8');
      return Number(io.match(/^write_bytes: (\d+)/m)[1]);
    } catch {
      return null;
    }
  }
}

// The cache_config.json of a run: the user's file (if any) with the run's overrides applied.
export function writeCacheConfig(file, base, overrides) {
  const config = structuredClone(base ?? {});
  config.cache = { ...(config.cache ?? {}), ...overrides };
  fs.writeFileSync(file, JSON.stringify(config, null, 2) + '\n');
  return config;
}

export function dirBytes(dir) {
  if (!fs.existsSync(dir)) return 0;
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath ?? entry.path, entry.name)).size;
  }
  return total;
}
