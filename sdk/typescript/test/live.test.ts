// The client against a real `rho serve` (the `rho` on PATH), following a real mission.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { AuthError, NotFoundError, RhoClient, type MissionEvent } from "../src/index.js";
import { liveServer, rho, scratchRepo } from "./helpers.js";

test("a live mission is followed to its end without missing a record", async () => {
  const { repo, env } = scratchRepo();
  const gate = join(repo, "..", "go");
  const wait = `while [ ! -e '${gate}' ]; do sleep 0.05; done`;
  rho(repo, env, "task", "add", "First", "--command", `${wait}; echo 1 > one.txt`);
  rho(repo, env, "task", "add", "Second", "--command", "echo 2 > two.txt", "--blocked-by", "task_1");
  const server = await liveServer(repo, env);
  const mission = spawn("rho", ["mission", "--from-tasks"], { cwd: repo, env, stdio: "ignore" });
  try {
    const client = new RhoClient(server.url, server.token);
    const missions = join(repo, ".rho", "missions");
    // The folder is made before its first mission.json: until that is written, the server
    // rightly knows no such mission.
    const started = () =>
      existsSync(missions) &&
      readdirSync(missions).some((name) => existsSync(join(missions, name, "mission.json")));
    while (!started()) {
      await new Promise((done) => setTimeout(done, 50));
    }
    const [id] = readdirSync(missions);
    assert.ok(id);
    const events: MissionEvent[] = [];
    for await (const event of client.follow(id)) {
      events.push(event);
      if (events.length === 1) writeFileSync(gate, ""); // the first task may go on now
    }
    const journal = readFileSync(join(missions, id, "journal.jsonl"), "utf8").trim().split("\n");
    const seqs = journal.map((line) => (JSON.parse(line) as { seq: number }).seq);
    assert.deepEqual(
      events.filter((e) => e.kind === "journal").map((e) => e.id),
      seqs,
    );
    const end = events.at(-1);
    assert.equal(end?.kind, "end");
    assert.equal(end?.data["status"], "completed");

    const graph = await client.missionGraph(id);
    const exported = rho(repo, env, "graph", "export", "--mission-dir", join(missions, id));
    assert.deepEqual(graph, JSON.parse(exported));
    const scoped = await client.taskGraph({ repository: "acme/widgets" });
    assert.deepEqual(scoped, JSON.parse(rho(repo, env, "graph", "export", "--repository", "acme/widgets")));
    assert.deepEqual(await client.logTail(id, "task_2"), []);
    const rows = await client.missions();
    assert.equal(rows[0]?.status, "completed");

    await assert.rejects(new RhoClient(server.url, "not-the-token").missions(), AuthError);
    await assert.rejects(client.mission("ffffffff"), NotFoundError);
  } finally {
    mission.kill("SIGKILL");
    server.process.kill("SIGKILL");
  }
});
