/**
 * Shared helpers for the TypeScript client scenarios (run with the Bun runtime).
 *
 * Environment:
 *   PGQ_HOST            server host (default 127.0.0.1)
 *   PGQ_TCP_PORT        server TCP port (default 6789)
 *   PGQ_TCP_PORT2       optional second broker: consumers (Worker, QueueEvents) connect here
 *   PGQ_TOKEN           optional auth token
 *   PGQ_TLS_CA          optional PEM file to trust: connect with TLS (`tls: { caFile }`)
 *   PGQ_QUEUE           queue name (default: pgq-<scenario>-<random>)
 *   PGQ_TIMEOUT_MS      hard timeout of the whole scenario (default 60000)
 *   PGQUEUE_JS_DIR      where scripts/js/install.sh put node_modules (default <repo>/.cache/js)
 *
 * The official client is loaded from $PGQUEUE_JS_DIR/node_modules (the pinned bunqueue),
 * never through Bun's auto-install: run these scripts with `bun --no-install`.
 *
 * Every scenario prints exactly one final line `RESULT <json>`; the JSON always has
 * `ok` (boolean) and `scenario`. Exit code 0 iff ok.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConnectionOptions } from 'bunqueue/client';

type ClientModule = typeof import('bunqueue/client');

/** The pinned `bunqueue/client` module from $PGQUEUE_JS_DIR/node_modules. */
async function loadClient(): Promise<ClientModule> {
  const jsDir = resolve(process.env.PGQUEUE_JS_DIR ?? join(import.meta.dir, '..', '..', '..', '..', '.cache', 'js'));
  if (!existsSync(join(jsDir, 'node_modules', 'bunqueue', 'package.json'))) {
    process.stdout.write(
      `RESULT ${JSON.stringify({ ok: false, error: `bunqueue is not installed in ${jsDir}; run scripts/js/install.sh` })}\n`,
    );
    process.exit(2);
  }
  return (await import(Bun.resolveSync('bunqueue/client', jsDir + '/'))) as ClientModule;
}

export const client: ClientModule = await loadClient();

export interface Env {
  scenario: string;
  host: string;
  port: number;
  port2: number;
  token: string | undefined;
  tlsCa: string | undefined;
  queue: string;
  timeoutMs: number;
}

export function readEnv(scenario: string): Env {
  const e = process.env;
  const port = Number(e.PGQ_TCP_PORT ?? 6789);
  const rand = Math.random().toString(36).slice(2, 10);
  return {
    scenario,
    host: e.PGQ_HOST ?? '127.0.0.1',
    port,
    port2: e.PGQ_TCP_PORT2 ? Number(e.PGQ_TCP_PORT2) : port,
    token: e.PGQ_TOKEN || undefined,
    tlsCa: e.PGQ_TLS_CA || undefined,
    queue: e.PGQ_QUEUE ?? `pgq-${scenario.replace(/_/g, '-')}-${rand}`,
    timeoutMs: Number(e.PGQ_TIMEOUT_MS ?? 60000),
  };
}

/** Connection options for the producer side (or the consumer side with `second`). */
export function connection(env: Env, second = false, extra: Partial<ConnectionOptions> = {}): ConnectionOptions {
  return {
    host: env.host,
    port: second ? env.port2 : env.port,
    ...(env.token ? { token: env.token } : {}),
    ...(env.tlsCa ? { tls: { caFile: env.tlsCa } } : {}),
    ...extra,
  };
}

let finished = false;

function emit(line: Record<string, unknown>, code: number): never {
  if (!finished) {
    finished = true;
    process.stdout.write(`RESULT ${JSON.stringify(line, jsonSafe)}\n`);
  }
  process.exit(code);
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (value === undefined) return null;
  return value;
}

export function succeed(env: Env, result: Record<string, unknown>): never {
  return emit({ ok: true, scenario: env.scenario, queue: env.queue, ...result }, 0);
}

export function fail(env: Env, error: unknown, result: Record<string, unknown> = {}): never {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return emit({ ok: false, scenario: env.scenario, queue: env.queue, error: message, ...result }, 1);
}

/**
 * Run a scenario body with a hard timeout. `partial` is reported on failure/timeout.
 * The body returns the result object; it should close its clients but need not.
 */
export function main(
  scenario: string,
  body: (env: Env, partial: Record<string, unknown>) => Promise<Record<string, unknown>>,
): void {
  const env = readEnv(scenario);
  const partial: Record<string, unknown> = {};
  const timer = setTimeout(() => fail(env, `timeout after ${env.timeoutMs} ms`, partial), env.timeoutMs);
  process.on('unhandledRejection', (err) => fail(env, err, { ...partial, where: 'unhandledRejection' }));
  body(env, partial)
    .then((result) => {
      clearTimeout(timer);
      succeed(env, result);
    })
    .catch((err) => fail(env, err, partial));
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Poll `check` every `everyMs` until it returns true or `ms` elapses (then throw `what`). */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 20000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}

export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

/**
 * Count the commands a client object sends, by wrapping the `send` method of its TCP
 * pool (white-box: Queue keeps it in `tcpPool`, Worker/FlowProducer in `tcp`). Wrap
 * before the client starts (Worker: `autorun: false`). Returns the live histogram.
 */
export function countCommands(client: unknown, field: 'tcp' | 'tcpPool'): Record<string, number> {
  const hist: Record<string, number> = {};
  const pool = (client as Record<string, unknown>)[field] as { send?: (cmd: { cmd: string }) => Promise<unknown> } | null;
  if (!pool || typeof pool.send !== 'function') return hist;
  const original = pool.send.bind(pool);
  pool.send = (cmd: { cmd: string }) => {
    hist[cmd.cmd] = (hist[cmd.cmd] ?? 0) + 1;
    return original(cmd);
  };
  return hist;
}

export function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10);
}
