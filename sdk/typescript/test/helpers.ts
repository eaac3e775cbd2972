// What the tests share: the recorded answers of sdk/contract, served by a local HTTP server, and
// a real `rho serve` (the `rho` on PATH) on a scratch repository.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

// From dist/test/ (where tsc puts this file): sdk/contract. import.meta.url, not
// import.meta.dirname: Node 18 lacks the latter.
export const CONTRACT = fileURLToPath(new URL("../../../contract/", import.meta.url));

interface Answer {
  name: string;
  path: string;
  status: number;
  content_type: string;
  file: string;
  authorized: boolean;
}

export interface Contract {
  token: string;
  mission_id: string;
  answers: Answer[];
}

export function contract(): Contract {
  return JSON.parse(readFileSync(join(CONTRACT, "answers.json"), "utf8")) as Contract;
}

/**
 * A server answering each recorded path with its recorded answer (401 without the token);
 * `overrides` maps a path to another file of the folder (the tampered graph).
 */
export async function recordedServer(overrides: Record<string, string> = {}): Promise<{ url: string; server: Server }> {
  const recorded = contract();
  const server = createServer((request, response) => {
    const path = request.url ?? "/";
    const denied = recorded.answers.find((a) => a.name === "error-401");
    if (request.headers["authorization"] !== `Bearer ${recorded.token}` && denied) {
      response.writeHead(401, { "content-type": "application/json" });
      response.end(readFileSync(join(CONTRACT, denied.file)));
      return;
    }
    const answer = recorded.answers.find((a) => samePath(a.path, path) && a.authorized);
    if (answer === undefined) {
      response.writeHead(404, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: `not recorded: ${path}` }));
      return;
    }
    response.writeHead(answer.status, { "content-type": answer.content_type });
    response.end(readFileSync(join(CONTRACT, overrides[path] ?? answer.file)));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { url: `http://127.0.0.1:${address.port}`, server };
}

/** The same path and query, however the query is encoded ("%20" or "+"). */
function samePath(one: string, other: string): boolean {
  const [a, b] = [new URL(one, "http://x"), new URL(other, "http://x")];
  const query = (url: URL): string => JSON.stringify([...url.searchParams.entries()].sort());
  return a.pathname === b.pathname && query(a) === query(b);
}

export function gitEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("RHO_") && !key.startsWith("GIT_")) env[key] = value;
  }
  return {
    ...env,
    HOME: home,
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@t.invalid",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@t.invalid",
  };
}

/** A scratch repository with one commit; its path and environment. */
export function scratchRepo(): { repo: string; env: NodeJS.ProcessEnv } {
  const home = mkdtempSync(join(tmpdir(), "rho-ts-"));
  const repo = join(home, "project");
  const env = gitEnv(home);
  execFileSync("git", ["init", "-q", "-b", "main", repo], { env });
  execFileSync("git", ["commit", "-q", "--allow-empty", "-m", "start"], { cwd: repo, env });
  return { repo, env };
}

export function rho(repo: string, env: NodeJS.ProcessEnv, ...args: string[]): string {
  return execFileSync("rho", args, { cwd: repo, env, encoding: "utf8" });
}

/** `rho serve --port 0` with a known token; its URL, token and process. */
export async function liveServer(repo: string, env: NodeJS.ProcessEnv): Promise<{ url: string; token: string; process: ChildProcess }> {
  const token = "typescript-client-test-token";
  const tokenFile = join(repo, "..", "token");
  writeFileSync(tokenFile, token);
  const child = spawn("rho", ["serve", "--port", "0", "--token-file", tokenFile], {
    cwd: repo,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((done, fail) => {
    lines.once("line", (line) => {
      const match = /^rho serve: (http:\/\/[^/]+)\//.exec(line);
      if (match?.[1]) done(match[1]);
      else fail(new Error(`rho serve printed no URL: ${line}`));
    });
    child.once("exit", (code) => fail(new Error(`rho serve exited ${code}`)));
  });
  return { url, token, process: child };
}
