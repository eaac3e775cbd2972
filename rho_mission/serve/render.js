"use strict";
// The renderer of the mission page, shared by `rho serve`'s live page and by reports: it turns
// a view ({mission, tails, text}) into DOM nodes. Every text from the data goes into the page
// as text (textContent), never as markup. page.js, which follows it in the same script, uses it.
const RhoRender = (function () {
  const WORDS = {
    pending: "pending", in_progress: "running", completed: "completed", failed: "failed",
    cancelled: "cancelled", blocked: "blocked", not_run: "not run", executing: "executing",
    partial: "partial", planning: "planning",
  };
  const FINAL = new Set(["completed", "failed", "partial", "cancelled"]);
  const UNTIMED = {
    completed: "completed before this mission",
    blocked: "not run: a task it depends on failed",
    not_run: "not run: the mission stopped before its wave",
  };
  // A verified join's checks (--verify): their words, and the card colour each borrows.
  const CHECKS = {
    running: ["verifying", "in_progress"], passed: ["verified", "completed"],
    failed: ["verification failed", "failed"], cancelled: ["verification cancelled", "cancelled"],
  };

  // -- DOM helpers ------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    return node;
  }

  function badge(status) {
    return el("span", { class: "badge s-" + status, text: WORDS[status] || status });
  }

  // -- the model --------------------------------------------------------------------------------

  function millis(stamp) {
    const value = stamp ? Date.parse(stamp) : NaN;
    return Number.isNaN(value) ? null : value;
  }

  function took(ms) {
    if (ms === null || ms < 0) return "";
    if (ms < 1000) return ms + "ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + "s";
    const minutes = Math.floor(ms / 60000);
    return minutes + "m " + String(Math.round((ms % 60000) / 1000)).padStart(2, "0") + "s";
  }

  // A pending feature some join listed as blocked downstream of a failure, or as not run
  // because the mission stopped (a later wave's own join lists it no more: it is in that wave).
  function blockedIds(mission) {
    const joins = mission.wave_joins || [];
    return {
      blocked: new Set(joins.flatMap((join) => join.blocked_ids || [])),
      notRun: new Set(joins.flatMap((join) => join.not_run_ids || [])),
    };
  }

  // What attempts spent (a UsageTotal of mission.json), as the CLI says it: "$0.42, 12k in /
  // 1.5k out, 1 unknown"; null when nothing was recorded.
  function dollars(amount) {
    return "$" + (amount >= 0.1 || amount === 0 ? amount.toFixed(2) : amount.toFixed(4));
  }

  function tokens(count) {
    if (count >= 1e6) return (count / 1e6).toFixed(1) + "M";
    if (count >= 1e4) return Math.round(count / 1000) + "k";
    if (count >= 1000) return (count / 1000).toFixed(1) + "k";
    return String(count);
  }

  function usageText(total) {
    if (!total || !total.attempts) return null;
    const parts = [];
    if (typeof total.cost_usd === "number") parts.push(dollars(total.cost_usd));
    if (typeof total.input_tokens === "number" || typeof total.output_tokens === "number") {
      parts.push(tokens(total.input_tokens || 0) + " in / " + tokens(total.output_tokens || 0) + " out");
    }
    if (total.unknown) parts.push(parts.length ? total.unknown + " unknown" : "unknown");
    return parts.length ? parts.join(", ") : "nothing reported";
  }

  function shownStatus(feature, stopped) {
    if (feature.status !== "pending") return feature.status;
    if (stopped.blocked.has(feature.id)) return "blocked";
    return stopped.notRun.has(feature.id) ? "not_run" : feature.status;
  }

  // Ids as people count them (task_2 before task_10); the files keep their own order.
  const NATURAL = new Intl.Collator("en", { numeric: true });
  function naturally(ids) {
    return [...ids].sort(NATURAL.compare);
  }

  function waveList(mission) {
    const features = mission.features || [];
    if (mission.waves && mission.waves.length) return mission.waves;
    return features.length ? [features.map((f) => f.id)] : [];
  }

  function byId(mission) {
    const found = new Map();
    for (const feature of mission.features || []) found.set(feature.id, feature);
    return found;
  }

  function span(feature, now) {
    const start = millis(feature.started_at);
    if (start === null) return null;
    const end = millis(feature.completed_at);
    return [start, end === null ? (feature.status === "in_progress" ? now : start) : end];
  }

  // -- the mission view -------------------------------------------------------------------------

  function renderMission(view) {
    const mission = view.mission;
    const now = Date.now();
    const root = el("div", { class: "mission", "data-mission-id": mission.id, "data-status": mission.status });
    root.append(missionHeader(view, now));
    root.append(wavesSection(view));
    root.append(timelineSection(mission, now));
    const held = heldSection(mission);
    if (held) root.append(held);
    const failures = failuresSection(view);
    if (failures) root.append(failures);
    return root;
  }

  function missionHeader(view, now) {
    const mission = view.mission;
    const start = millis(mission.started_at);
    const end = millis(mission.completed_at);
    const running = !FINAL.has(mission.status);
    const length = start === null ? null : (end === null ? (running ? now : null) : end) - start;
    const box = el("div", { class: "head" },
      el("h2", {}, "mission " + mission.id, badge(mission.status)),
      el("p", { class: "meta", text: [
        mission.started_at ? "started " + mission.started_at : "not started",
        mission.completed_at ? "completed " + mission.completed_at : "",
        length === null ? "" : (running ? "running for " : "took ") + took(length),
        counts(mission),
      ].filter(Boolean).join(" · ") }));
    if (typeof mission.prompt === "string") box.append(el("p", { class: "meta", text: "prompt: " + mission.prompt }));
    const spent = usageText(mission.usage);
    if (spent) box.append(el("p", { class: "meta usage", text: "usage: " + spent }));
    if (mission.budget_stop) box.append(el("p", { class: "meta budget", text: "stopped: " + mission.budget_stop }));
    // Counts in rho's words (records/_stats.py), given by the report or the missions' list.
    if (view.integration) box.append(el("p", { class: "meta integration", text: "integration: " + view.integration }));
    if (!view.text) {
      box.append(el("p", { class: "note", text:
        "Prompts, descriptions, commands and logs are left out of this report " +
        "(rho mission report --include-text puts them in)." }));
    }
    return box;
  }

  // As the cards say it: a pending feature a join listed as blocked counts as blocked.
  function counts(mission) {
    const tally = {};
    const stopped = blockedIds(mission);
    for (const feature of mission.features || []) {
      const status = shownStatus(feature, stopped);
      tally[status] = (tally[status] || 0) + 1;
    }
    return Object.entries(tally).map(([status, n]) => n + " " + (WORDS[status] || status)).join(", ");
  }

  function wavesSection(view) {
    const mission = view.mission;
    const features = byId(mission);
    const blocked = blockedIds(mission);
    const joins = new Map((mission.wave_joins || []).map((j) => [j.wave, j]));
    const board = el("div", { class: "waves" });
    waveList(mission).forEach((ids, index) => {
      const column = el("div", { class: "wave", "data-wave": String(index + 1) },
        el("h3", { text: "Wave " + (index + 1) }));
      for (const id of naturally(ids)) {
        const feature = features.get(id);
        if (feature) column.append(card(feature, shownStatus(feature, blocked)));
      }
      const join = joins.get(index + 1);
      column.append(el("p", { class: "join", text: join ? join.summary : "not joined yet" }));
      const checks = join && verificationLine(join);
      if (checks) column.append(checks);
      board.append(column);
    });
    requestAnimationFrame(() => drawEdges(board, mission));
    return el("section", { "aria-label": "waves" }, el("h2", { text: "Waves" }), board);
  }

  function card(feature, status) {
    const range = span(feature, Date.now());
    const bits = [];
    if (range && feature.completed_at) bits.push("took " + took(range[1] - range[0]));
    else if (range) bits.push("running for " + took(range[1] - range[0]));
    if (feature.attempts) bits.push(feature.attempts + " attempt" + (feature.attempts > 1 ? "s" : ""));
    const files = feature.handoff ? fileCount(feature.handoff) : null;
    if (files !== null) bits.push(files + " file" + (files === 1 ? "" : "s") + " changed");
    return el("article", { class: "card s-" + status, "data-feature-id": feature.id, "data-status": status },
      el("header", {}, el("span", { class: "fid", text: feature.id }), badge(status)),
      feature.description ? el("p", { class: "desc", text: feature.description }) : null,
      bits.length ? el("p", { class: "times", text: bits.join(" · ") }) : null,
      (feature.blocked_by || []).length
        ? el("p", { class: "deps", text: "depends on " + feature.blocked_by.join(", ") }) : null,
      feature.error && (status === "failed" || status === "cancelled")
        ? el("p", { class: "error", text: "error: " + feature.error }) : null,
      feature.conflict ? conflictLine(feature.conflict) : null,
      usageText(feature.usage) ? el("p", { class: "meta usage", text: "usage: " + usageText(feature.usage) }) : null);
  }

  // What came of a feature's conflicted merge at its join (mission.json's "conflict").
  function conflictLine(conflict) {
    const whom = (conflict.with || []).length ? conflict.with.join(", ") : "the integration branch";
    const rungs = [];
    if (conflict.resolve_attempts) rungs.push(conflict.resolve_attempts + " resolve attempt" + (conflict.resolve_attempts === 1 ? "" : "s"));
    if (conflict.replays) rungs.push(conflict.replays + " replay" + (conflict.replays === 1 ? "" : "s"));
    const text = "merge conflict in " + (conflict.paths || []).join(", ") + " with " + whom + ": " +
      conflict.outcome + (rungs.length ? " (" + rungs.join(", ") + ")" : "");
    return el("p", { class: "meta conflict", "data-outcome": conflict.outcome, text: text });
  }

  // What the checks of a verified join said; null for a join none ran on.
  function verificationLine(join) {
    const checked = join.verification;
    if (!checked || !CHECKS[checked.status]) return null;
    const [words, style] = CHECKS[checked.status];
    const bits = [checked.attempts + " check" + (checked.attempts === 1 ? "" : "s")];
    if (checked.fix_attempts) bits.push(checked.fix_attempts + " fix" + (checked.fix_attempts === 1 ? "" : "es"));
    if (checked.status !== "running") bits.push("took " + took(checked.duration_ms));
    const line = el("p", { class: "meta verification", "data-wave": String(join.wave), "data-status": checked.status },
      el("span", { class: "badge s-" + style, text: words }), " " + bits.join(" · "));
    line.style.fontSize = ".8rem"; // as small as the join's line above it: a detail of that line
    return line;
  }

  function fileCount(handoff) {
    if (Array.isArray(handoff.files_changed)) return handoff.files_changed.length;
    return typeof handoff.files_changed_count === "number" ? handoff.files_changed_count : null;
  }

  function drawEdges(board, mission) {
    const old = board.querySelector("svg.edges");
    if (old) old.remove();
    const box = board.getBoundingClientRect();
    const layer = svg("svg", { class: "edges", width: board.scrollWidth, height: board.scrollHeight });
    const cards = new Map();
    for (const node of board.querySelectorAll(".card")) cards.set(node.dataset.featureId, node);
    for (const feature of mission.features || []) {
      const to = cards.get(feature.id);
      for (const blocker of feature.blocked_by || []) {
        const from = cards.get(blocker);
        if (!from || !to) continue;
        const a = from.getBoundingClientRect();
        const b = to.getBoundingClientRect();
        const x1 = a.right - box.left + board.scrollLeft;
        const y1 = a.top + a.height / 2 - box.top;
        const x2 = b.left - box.left + board.scrollLeft;
        const y2 = b.top + b.height / 2 - box.top;
        const bend = Math.max(20, (x2 - x1) / 2);
        const hot = from.dataset.status === "failed" || from.dataset.status === "cancelled";
        layer.append(svg("path", {
          d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
          class: hot ? "hot" : "", "data-from": blocker, "data-to": feature.id,
        }));
      }
    }
    board.prepend(layer);
  }

  function timelineSection(mission, now) {
    const features = byId(mission);
    const order = waveList(mission).flatMap(naturally).filter((id) => features.has(id));
    const spans = order.map((id) => span(features.get(id), now)).filter(Boolean);
    const section = el("section", { "aria-label": "timeline" }, el("h2", { text: "Timeline" }));
    if (!spans.length) {
      section.append(el("p", { class: "note", text: "No feature has started yet." }));
      return section;
    }
    const start = Math.min(...spans.map((s) => s[0]));
    const total = Math.max(1, Math.max(...spans.map((s) => s[1])) - start);
    const box = el("div", { class: "timeline" });
    const blocked = blockedIds(mission);
    for (const id of order) {
      const feature = features.get(id);
      box.append(timelineRow(feature, shownStatus(feature, blocked), start, total, now));
    }
    box.append(axis(total));
    section.append(box);
    return section;
  }

  function timelineRow(feature, status, start, total, now) {
    const track = el("div", { class: "track" });
    const range = span(feature, now);
    if (range) {
      const bar = el("div", {
        class: "bar s-" + feature.status,
        title: feature.id + ": " + (WORDS[feature.status] || feature.status) + ", " + took(range[1] - range[0]),
        text: took(range[1] - range[0]),
      });
      bar.style.left = ((range[0] - start) / total) * 100 + "%";
      bar.style.width = ((range[1] - range[0]) / total) * 100 + "%";
      track.append(bar);
    } else if (UNTIMED[status]) {
      track.append(el("span", { class: "untimed", text: UNTIMED[status] }));
    }
    return el("div", { class: "trow", "data-feature-id": feature.id },
      el("span", { class: "label", text: feature.id }), track);
  }

  function axis(total) {
    const line = el("div", { class: "axis" });
    for (let i = 0; i <= 4; i += 1) {
      const tick = el("span", { class: "tick", text: took(Math.round((total * i) / 4)) || "0s" });
      tick.style.left = i * 25 + "%";
      line.append(tick);
    }
    return line;
  }

  // The store's tasks this mission does not run: held by a cancelled, skipped or reviewing
  // status (their own, or a blocker's).
  function heldSection(mission) {
    const held = mission.held || [];
    if (!held.length) return null;
    const list = el("ul", { class: "held" });
    for (const task of held) {
      list.append(el("li", { "data-task-id": task.id, text: task.id + ": " + task.reason }));
    }
    return el("section", { "aria-label": "held" },
      el("h2", { text: "Not run: held by the task store (" + held.length + ")" }), list);
  }

  function failuresSection(view) {
    const failed = (view.mission.features || []).filter((f) => f.status === "failed");
    const unverified = (view.mission.wave_joins || []).filter((j) => j.verification && j.verification.status === "failed");
    if (!failed.length && !unverified.length) return null;
    const section = el("section", { "aria-label": "failures" }, el("h2", { text: "Failures" }));
    for (const join of unverified) section.append(verificationFailure(view, join));
    for (const feature of failed) {
      const tail = (view.tails || {})[feature.id];
      const box = el("div", { class: "failure", "data-feature-id": feature.id },
        el("h3", {}, feature.id + " ", badge("failed")),
        el("p", { class: "error", text: "error: " + (feature.error || "(written at the wave's join)") }));
      if (Array.isArray(tail) && tail.length) {
        box.append(el("p", { class: "meta", text: "last " + tail.length + " line(s) of its log:" }));
        box.append(el("pre", { class: "log", text: tail.join("\n") }));
      } else if (view.text) {
        box.append(el("p", { class: "note", text: tail === undefined ? "log loading…" : "no log written" }));
      }
      section.append(box);
    }
    return section;
  }

  // A wave whose checks still failed: their error and, when the view has it, their log's tail.
  function verificationFailure(view, join) {
    const name = "verify-" + join.wave;
    const checked = join.verification;
    const tail = (view.tails || {})[name];
    const box = el("div", { class: "failure", "data-verification": String(join.wave) },
      el("h3", {}, "wave " + join.wave + " checks ", badge("failed")),
      el("p", { class: "error", text: "error: " + (checked.error || "the checks failed") +
        (checked.fix_attempts ? " (after " + checked.fix_attempts + " fix attempt" + (checked.fix_attempts === 1 ? "" : "s") + ")" : "") }));
    if (Array.isArray(tail) && tail.length) {
      box.append(el("p", { class: "meta", text: "last " + tail.length + " line(s) of " + name + ".log:" }));
      box.append(el("pre", { class: "log", text: tail.join("\n") }));
    }
    return box;
  }

  return { WORDS, badge, byId, el, renderMission };
})();
