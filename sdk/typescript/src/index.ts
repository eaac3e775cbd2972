/**
 * A TypeScript client of `rho serve` (Node >= 18, the platform's `fetch`; no dependency).
 *
 * ```ts
 * import { RhoClient } from "@rho-mission/client";
 * const rho = new RhoClient("http://127.0.0.1:8765", token);
 * for (const row of await rho.missions()) console.log(row.id, row.status);
 * const graph = await rho.missionGraph("latest");          // validated before it is returned
 * for await (const event of rho.follow("latest")) console.log(event.kind);
 * ```
 *
 * Errors: `ClientError` (`status`: the HTTP status, or undefined when no answer came), and its
 * kinds `AuthError` (401), `NotFoundError` (404), `RequestError` (400, or an argument that cannot
 * be sent) and `InvalidGraphError` (a graph that breaks the rho.graph/v1 topology). The same
 * calls and errors as the Python `rho_mission.client` and the Go `rhoclient` package.
 */

export class ClientError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.name = new.target.name;
    this.status = status;
  }
}
/** The server refused the token (401). */
export class AuthError extends ClientError {}
/** No such mission, feature or task store (404). */
export class NotFoundError extends ClientError {}
/** A 400, or an argument that cannot be sent (a mission id that is not 8 hex digits). */
export class RequestError extends ClientError {}
/** A graph from the server that breaks the rho.graph/v1 topology. */
export class InvalidGraphError extends ClientError {}

/** One mission of `GET /v1/missions`. */
export interface MissionSummary {
  id: string;
  status: string;
  started_at: string | null;
  completed_at: string | null;
  features: number;
  counts: Record<string, number>;
  waves: number;
  joined_waves: number;
  /** What it is about (its prompt, or its first tasks' subjects). */
  what: string;
  /** Where and how it was last merged ("main (squash)"), "cleaned", or null. */
  merged: string | null;
}

/** A reference to a node: its kind and id. */
export interface Ref {
  kind: string;
  id: string;
}

/** A rho.graph/v1 document, as the server sends it (facts keep every field they have). */
export interface GraphDocument {
  schema_version: "rho.graph/v1";
  generated_at: string;
  scope: { repository_id?: string | null };
  nodes: Array<{ id: string; kind: string; attributes?: Record<string, string> } & Record<string, unknown>>;
  edges: Array<{ id: string; kind: string; from: Ref; to: Ref } & Record<string, unknown>>;
  events: Array<{ id: string; type: string; subject: Ref } & Record<string, unknown>>;
}

/**
 * One event of a followed mission: `mission` (the whole mission.json), `journal` (one
 * journal.jsonl record; `id` its line number), `error`, or `end` (`{status}`, the last one).
 */
export interface MissionEvent {
  kind: string;
  data: Record<string, unknown>;
  id?: number;
}

export interface GraphOptions {
  /** The graph's repository scope, as `rho graph export --repository`. */
  repository?: string;
}

export const NODE_KINDS = ["system", "knowledge", "execution", "policy", "quality", "operations"];
export const EDGE_KINDS = ["contains", "depends_on", "references", "produced", "governed_by", "validated_by"];
export const EVENT_TYPES = ["created", "updated", "transitioned", "observed", "deleted"];

const MISSION_ID = /^[0-9a-f]{8}$/;
const RECONNECTS = 5;

export class RhoClient {
  private readonly base: string;
  private readonly token: string;

  constructor(baseUrl: string, token: string) {
    this.base = baseUrl.replace(/\/+$/, "");
    this.token = token;
  }

  /** The repository's missions, newest first. */
  async missions(): Promise<MissionSummary[]> {
    const body = await this.json("/v1/missions");
    const rows = isObject(body) ? body["missions"] : undefined;
    if (!Array.isArray(rows) || !rows.every(isSummary)) {
      throw new ClientError("the server's list of missions is not valid");
    }
    return rows;
  }

  /** A mission's mission.json (`latest`: the mission started last). */
  async mission(missionId: string): Promise<Record<string, unknown>> {
    const body = await this.json(missionPath(missionId));
    if (!isObject(body) || body["schema_version"] !== "rho.mission/v1") {
      throw new ClientError("the server's mission is not a mission document");
    }
    return body;
  }

  /** A mission's graph, validated before it is returned. */
  async missionGraph(missionId: string, options: GraphOptions = {}): Promise<GraphDocument> {
    return validateGraph(await this.json(missionPath(missionId, "/graph"), scope(options)));
  }

  /** The task store's graph, validated before it is returned. */
  async taskGraph(options: GraphOptions = {}): Promise<GraphDocument> {
    return validateGraph(await this.json("/v1/tasks/graph", scope(options)));
  }

  /** The last `lines` lines of a feature's log; null when it wrote none. */
  async logTail(missionId: string, featureId: string, lines = 40): Promise<string[] | null> {
    const path = missionPath(missionId, `/logs/${encodeURIComponent(featureId)}`);
    const body = await this.json(path, { tail: String(lines) });
    const found = isObject(body) ? body["lines"] : undefined;
    if (found === null) return null;
    if (!Array.isArray(found) || !found.every((line) => typeof line === "string")) {
      throw new ClientError("the server's log lines are not a list of strings");
    }
    return found;
  }

  /**
   * The mission's events as they happen, until it ends. A cut connection is opened again from
   * the last journal record received (`Last-Event-ID`), so no record is missed or repeated.
   */
  async *follow(missionId: string): AsyncGenerator<MissionEvent> {
    const path = missionPath(missionId, "/events");
    let last: number | undefined;
    for (let tries = 0; tries <= RECONNECTS; tries++) {
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      if (last !== undefined) headers["Last-Event-ID"] = String(last);
      const response = await this.get(path, undefined, headers);
      if (response.body === null) throw new ClientError("the server sent no event stream");
      for await (const event of parseEvents(response.body)) {
        if (event.kind === "journal" && event.id !== undefined) {
          if (last !== undefined && event.id <= last) continue; // sent before the cut
          last = event.id;
        }
        yield event;
        if (event.kind === "end") return;
      }
    }
    throw new ClientError(`the event stream of mission ${missionId} ended before the mission`);
  }

  private async json(path: string, params?: Record<string, string>): Promise<unknown> {
    const response = await this.get(path, params);
    try {
      return await response.json();
    } catch {
      throw new ClientError("the server's answer is not JSON", response.status);
    }
  }

  private async get(
    path: string,
    params?: Record<string, string>,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const query = params ? `?${new URLSearchParams(params).toString()}` : "";
    let response: Response;
    try {
      response = await fetch(this.base + path + query, {
        headers: { Authorization: `Bearer ${this.token}`, ...headers },
      });
    } catch (error) {
      throw new ClientError(`rho serve did not answer: ${describe(error)}`);
    }
    if (response.ok) return response;
    const message = await errorText(response, path);
    const kinds: Record<number, typeof ClientError> = {
      401: AuthError,
      404: NotFoundError,
      400: RequestError,
    };
    const Kind = kinds[response.status] ?? ClientError;
    throw new Kind(message, response.status);
  }
}

/**
 * Check a graph's topology as the Python client's `graph.validate_graph` does for it: the
 * schema version, known kinds, each id once, every edge endpoint and event subject a node.
 */
export function validateGraph(data: unknown): GraphDocument {
  const fail = (why: string): never => {
    throw new InvalidGraphError(`the server's graph is not valid: ${why}`);
  };
  if (!isObject(data)) return fail("not a JSON object");
  if (data["schema_version"] !== "rho.graph/v1") fail("schema_version is not rho.graph/v1");
  const lists = ["nodes", "edges", "events"].map((name) => {
    const list = data[name];
    return Array.isArray(list) ? list : fail(`${name} is not a list`);
  });
  const [nodes = [], edges = [], events = []] = lists;
  const known = new Set<string>();
  const claim = (fact: string, item: unknown, kinds: string[], field: string): Record<string, unknown> => {
    if (!isObject(item) || typeof item["id"] !== "string") return fail(`a ${fact} has no id`);
    const word = item[field];
    if (typeof word !== "string" || !kinds.includes(word)) {
      fail(`${fact} ${JSON.stringify(item["id"])} has an unknown ${field} ${JSON.stringify(word)}`);
    }
    return item;
  };
  const resolve = (fact: string, id: unknown, role: string, ref: unknown): void => {
    const key = isObject(ref) ? `${String(ref["kind"])}\u0000${String(ref["id"])}` : "";
    if (!known.has(key)) {
      fail(`${fact} ${JSON.stringify(id)}: its ${role} is no node of the graph`);
    }
  };
  const ids = new Set<string>();
  for (const item of nodes) {
    const node = claim("node", item, NODE_KINDS, "kind");
    once("node", node["id"] as string, ids, fail);
    known.add(`${String(node["kind"])}\u0000${String(node["id"])}`);
  }
  ids.clear();
  for (const item of edges) {
    const edge = claim("edge", item, EDGE_KINDS, "kind");
    once("edge", edge["id"] as string, ids, fail);
    resolve("edge", edge["id"], "source", edge["from"]);
    resolve("edge", edge["id"], "target", edge["to"]);
  }
  ids.clear();
  for (const item of events) {
    const event = claim("event", item, EVENT_TYPES, "type");
    once("event", event["id"] as string, ids, fail);
    resolve("event", event["id"], "subject", event["subject"]);
  }
  return data as unknown as GraphDocument;
}

function once(fact: string, id: string, seen: Set<string>, fail: (why: string) => never): void {
  if (seen.has(id)) fail(`${fact} ${JSON.stringify(id)} is defined more than once`);
  seen.add(id);
}

/** Server-Sent Events of a body, as the server frames them (`id`, `event`, one `data` line). */
export async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<MissionEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let fields: Record<string, string> = {};
  let lastId: string | undefined;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, "");
        buffer = buffer.slice(newline + 1);
        if (line === "") {
          if ("id" in fields) lastId = fields["id"];
          if ("data" in fields) yield toEvent(fields, lastId);
          fields = {};
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const name = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          fields[name] = name === "data" && "data" in fields ? `${fields["data"]}\n${value}` : value;
        }
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}

function toEvent(fields: Record<string, string>, lastId: string | undefined): MissionEvent {
  const kind = fields["event"] ?? "message";
  let data: unknown;
  try {
    data = JSON.parse(fields["data"] ?? "");
  } catch {
    throw new ClientError(`the server's ${kind} event is not JSON`);
  }
  if (!isObject(data)) throw new ClientError(`the server's ${kind} event is not a JSON object`);
  // SSE carries the last id over to events without one: only a journal record has its own.
  const id = kind === "journal" && lastId !== undefined && /^\d+$/.test(lastId) ? Number(lastId) : undefined;
  return id === undefined ? { kind, data } : { kind, data, id };
}

function missionPath(missionId: string, rest = ""): string {
  if (missionId !== "latest" && !MISSION_ID.test(missionId)) {
    throw new RequestError(
      `invalid mission id ${JSON.stringify(missionId)}: 8 lowercase hex digits, or latest`,
    );
  }
  return `/v1/missions/${missionId}${rest}`;
}

function scope(options: GraphOptions): Record<string, string> | undefined {
  return options.repository === undefined ? undefined : { repository: options.repository };
}

async function errorText(response: Response, path: string): Promise<string> {
  try {
    const body: unknown = await response.json();
    if (isObject(body) && typeof body["error"] === "string") return body["error"];
  } catch {
    // not JSON: said below
  }
  return `HTTP ${response.status} from ${path}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isSummary(row: unknown): row is MissionSummary {
  return (
    isObject(row) &&
    typeof row["id"] === "string" &&
    typeof row["status"] === "string" &&
    typeof row["features"] === "number" &&
    isObject(row["counts"])
  );
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
