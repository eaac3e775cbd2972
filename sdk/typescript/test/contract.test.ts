// The client against the recorded answers of sdk/contract (the same the Python and Go ones use).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  AuthError,
  ClientError,
  InvalidGraphError,
  NotFoundError,
  RequestError,
  RhoClient,
  validateGraph,
} from "../src/index.js";
import { CONTRACT, contract, recordedServer } from "./helpers.js";

const recorded = contract();
const id = recorded.mission_id;
let url = "";
let close = (): void => undefined;

before(async () => {
  const { url: found, server } = await recordedServer();
  url = found;
  close = () => server.close();
});
after(() => close());

function client(token = recorded.token): RhoClient {
  return new RhoClient(url, token);
}

function file(name: string): unknown {
  return JSON.parse(readFileSync(join(CONTRACT, name), "utf8"));
}

test("missions, a mission and its graph are the recorded answers", async () => {
  const rows = await client().missions();
  assert.deepEqual(rows, (file("missions.json") as { missions: unknown }).missions);
  const mission = await client().mission(id);
  assert.equal(mission["id"], id);
  const graph = await client().missionGraph(id);
  assert.deepEqual(graph, file("mission-graph.json"));
  const scoped = await client().missionGraph(id, { repository: "acme/widgets" });
  assert.equal(scoped.scope.repository_id, "acme/widgets");
  const tasks = await client().taskGraph();
  assert.ok(tasks.nodes.length === 3);
});

test("a log tail is its lines", async () => {
  assert.deepEqual(await client().logTail(id, "task_2", 5), (file("log.json") as { lines: string[] }).lines);
});

test("each refusal is its typed error, with the server's words", async () => {
  await assert.rejects(client("wrong").missions(), (error: unknown) => {
    assert.ok(error instanceof AuthError);
    assert.equal(error.status, 401);
    assert.equal(error.message, (file("error-401.json") as { error: string }).error);
    return true;
  });
  await assert.rejects(client().mission("ffffffff"), NotFoundError);
  await assert.rejects(client().logTail(id, "task_2", 0), (error: unknown) => {
    assert.ok(error instanceof RequestError);
    assert.equal(error.status, 400);
    return true;
  });
  await assert.rejects(client().taskGraph({ repository: " " }), RequestError);
  await assert.rejects(client().mission("../etc"), (error: unknown) => {
    assert.ok(error instanceof RequestError);
    assert.equal(error.status, undefined); // refused before anything was sent
    return true;
  });
});

test("the tampered graph is refused with InvalidGraphError", async () => {
  const { url: tampered, server } = await recordedServer({
    [`/v1/missions/${id}/graph`]: "tampered-graph.json",
  });
  try {
    await assert.rejects(new RhoClient(tampered, recorded.token).missionGraph(id), (error: unknown) => {
      assert.ok(error instanceof InvalidGraphError);
      assert.match(error.message, /its target is no node of the graph/);
      return true;
    });
  } finally {
    server.close();
  }
});

test("the topology checks", () => {
  const good = file("mission-graph.json") as Record<string, unknown>;
  const copy = (): Record<string, any> => JSON.parse(JSON.stringify(good));
  const cases: Array<[string, (g: Record<string, any>) => void, RegExp]> = [
    ["schema", (g) => (g["schema_version"] = "rho.graph/v2"), /schema_version/],
    ["node kind", (g) => (g["nodes"][0].kind = "magic"), /unknown kind/],
    ["edge kind", (g) => (g["edges"][0].kind = "magic"), /unknown kind/],
    ["event type", (g) => (g["events"][0].type = "magic"), /unknown type/],
    ["source", (g) => (g["edges"][0].from.kind = "policy"), /its source is no node/],
    ["subject", (g) => (g["events"][0].subject.id = "ghost"), /its subject is no node/],
    ["twice", (g) => g["nodes"].push(g["nodes"][0]), /defined more than once/],
    ["no list", (g) => (g["edges"] = {}), /edges is not a list/],
  ];
  for (const [what, spoil, words] of cases) {
    const graph = copy();
    spoil(graph);
    assert.throws(() => validateGraph(graph), words, what);
  }
  assert.throws(() => validateGraph([]), InvalidGraphError);
  assert.deepEqual(validateGraph(copy()), good);
});

test("follow yields the recorded stream, every journal record once, then end", async () => {
  const events = [];
  for await (const event of client().follow(id)) events.push(event);
  const journal = events.filter((e) => e.kind === "journal").map((e) => e.id);
  const recordedIds = [...readFileSync(join(CONTRACT, "events.txt"), "utf8").matchAll(/^id: (\d+)$/gm)].map((m) =>
    Number(m[1]),
  );
  assert.deepEqual(journal, recordedIds);
  // Causal order: the journal records first, then the mission state they led to.
  assert.equal(events.at(-2)?.kind, "mission");
  assert.equal(events.at(-1)?.kind, "end");
  assert.ok(events.at(-1)?.data["status"] === "partial");
});

test("no server is a ClientError without a status", async () => {
  await assert.rejects(new RhoClient("http://127.0.0.1:9", "x").missions(), (error: unknown) => {
    assert.ok(error instanceof ClientError);
    assert.equal(error.status, undefined);
    return true;
  });
});
