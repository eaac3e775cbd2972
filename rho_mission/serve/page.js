"use strict";
// The mission page of `rho serve` and `rho mission report`: one renderer (render.js), two
// sources. A report embeds its data (#rho-data); the live page reads the API with the token it
// finds in its URL fragment (#token=...) or asks for, and follows a running mission's events.
(function () {
  const { WORDS, badge, byId, el, renderMission } = RhoRender;
  const TOKEN_KEY = "rho-serve-token";
  const app = document.getElementById("app");
  const conn = document.getElementById("conn");

  // -- a static report --------------------------------------------------------------------------

  function embedded() {
    const node = document.getElementById("rho-data");
    const text = node ? node.textContent.trim() : "";
    return text && text !== "null" ? JSON.parse(text) : null;
  }

  // -- the live page ----------------------------------------------------------------------------

  const live = {
    token: null, mission: null, integration: null, tails: {}, asked: new Set(), source: null, timer: null, frame: 0, route: 0,
  };

  function fragment() {
    return new URLSearchParams(location.hash.replace(/^#/, ""));
  }

  function takeToken() {
    const params = fragment();
    const given = params.get("token");
    if (given) {
      sessionStorage.setItem(TOKEN_KEY, given);
      params.delete("token");
      history.replaceState(null, "", location.pathname + (params.toString() ? "#" + params : ""));
    }
    let token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) {
      token = (window.prompt("Token of rho serve (it prints it, and keeps it in .rho/serve.token):") || "").trim();
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
    }
    return token;
  }

  async function api(path) {
    const response = await fetch(path, { headers: { Authorization: "Bearer " + live.token }, cache: "no-store" });
    if (response.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      throw new Error("the token was refused: open the URL rho serve printed, or reload and enter the token");
    }
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || "HTTP " + response.status);
    return body;
  }

  function say(text) {
    conn.textContent = text;
  }

  function fail(error) {
    app.replaceChildren(el("p", { class: "error", role: "alert", text: String(error.message || error) }));
  }

  function stopFollowing() {
    if (live.source) live.source.close();
    if (live.timer) clearInterval(live.timer);
    live.source = null;
    live.timer = null;
  }

  function route() {
    stopFollowing();
    live.route += 1;
    const id = fragment().get("mission");
    if (id) showMission(id, live.route).catch(fail);
    else showList(live.route).catch(fail);
  }

  async function showList(ticket) {
    document.title = "rho missions";
    const body = await api("/v1/missions");
    if (ticket !== live.route) return;
    const rows = body.missions.map((m) => el("tr", { "data-mission-id": m.id },
      el("td", {}, el("a", { href: "#mission=" + m.id, text: m.id })),
      el("td", {}, badge(m.status)),
      el("td", { text: m.counts.completed + " / " + m.features + " completed" +
        (m.counts.failed ? ", " + m.counts.failed + " failed" : "") }),
      el("td", { class: "what", text: m.what || "" }),
      el("td", { class: "merged", text: m.merged || "" }),
      el("td", { class: "integration", text: m.integration || "" }),
      el("td", { text: m.started_at || "-" }),
      el("td", { text: m.completed_at || "-" })));
    const head = el("tr", {}, ...["mission", "status", "features", "what", "merged", "integration", "started", "completed"].map((t) => el("th", { text: t })));
    app.replaceChildren(el("h2", { text: body.missions.length + " mission(s)" }),
      rows.length ? el("table", { class: "list" }, el("thead", {}, head), el("tbody", {}, ...rows))
        : el("p", { class: "note", text: "No mission in this repository yet: rho mission --from-tasks runs one." }));
    say("missions as of " + new Date().toLocaleTimeString());
    if (!live.timer) live.timer = setInterval(() => showList(live.route).catch(fail), 3000);
  }

  async function showMission(id, ticket) {
    document.title = "rho mission " + id;
    const mission = await api("/v1/missions/" + encodeURIComponent(id));
    if (ticket !== live.route) return;
    live.mission = mission;
    live.tails = {};
    live.asked = new Set();
    live.integration = null;
    draw();
    loadTails();
    follow(id);
    integrate(id).catch(fail);
  }

  // The mission's integration in words: its row of the missions' list (records/_stats.py).
  async function integrate(id) {
    const body = await api("/v1/missions");
    const row = body.missions.find((m) => m.id === id);
    live.integration = (row && row.integration) || null;
    draw();
  }

  function follow(id) {
    const url = "/v1/missions/" + encodeURIComponent(id) + "/events?access_token=" + encodeURIComponent(live.token);
    const source = new EventSource(url);
    live.source = source;
    say("following mission " + id);
    source.addEventListener("mission", (event) => {
      live.mission = JSON.parse(event.data);
      loadTails();
      draw();
      integrate(id).catch(fail);
    });
    source.addEventListener("journal", (event) => {
      apply(JSON.parse(event.data));
      loadTails();
      draw();
    });
    source.addEventListener("end", () => {
      source.close();
      say("mission " + id + " ended: " + (WORDS[live.mission.status] || live.mission.status));
      draw();
    });
    source.onerror = () => say(source.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…");
    live.timer = setInterval(() => {
      if ((live.mission.features || []).some((f) => f.status === "in_progress")) draw();
    }, 1000);
  }

  function apply(record) {
    const feature = byId(live.mission).get(record.feature_id);
    if (record.event === "mission" && record.status) live.mission.status = record.status;
    if (!feature) return;
    if (record.event === "dispatch") {
      // The error stays: the journal has only its digest, and a card shows it only on failure.
      Object.assign(feature, { status: "in_progress", started_at: record.at, completed_at: null });
    } else if (record.event === "finish") {
      Object.assign(feature, { status: record.status, completed_at: record.at, attempts: record.attempts });
    }
  }

  function loadTails() {
    for (const feature of live.mission.features || []) {
      if (feature.status !== "failed" || live.asked.has(feature.id)) continue;
      live.asked.add(feature.id);
      const path = "/v1/missions/" + live.mission.id + "/logs/" + encodeURIComponent(feature.id) + "?tail=20";
      api(path).then((body) => { live.tails[feature.id] = body.lines || []; draw(); }).catch(() => {});
    }
  }

  function draw() {
    if (live.frame) return;
    live.frame = requestAnimationFrame(() => {
      live.frame = 0;
      app.replaceChildren(renderMission({ mission: live.mission, tails: live.tails, text: true, integration: live.integration }));
    });
  }

  // -- start ------------------------------------------------------------------------------------

  const data = embedded();
  if (data) {
    document.body.classList.add("report");
    say("report of mission " + data.mission.id);
    app.replaceChildren(renderMission(data));
    window.addEventListener("resize", () => app.replaceChildren(renderMission(data)));
    return;
  }
  live.token = takeToken();
  if (!live.token) {
    fail(new Error("no token: open the URL that rho serve printed (it carries the token)"));
    return;
  }
  window.addEventListener("hashchange", route);
  window.addEventListener("resize", () => live.mission && fragment().get("mission") && draw());
  route();
})();
