// A2A Arena dashboard: campaigns, their cells and matches, match transcripts, and the
// leaderboard (#/leaderboard: every settled campaign's players, rated together).
//
// Plain JavaScript, no dependencies, no external resources. Everything the API
// returns is treated as hostile (attacker and defender messages are written by
// the attacker): it reaches the page only as text nodes and textContent, never
// as markup, and links are built from encoded ids only.
//
// With ARENA_API_TOKENS set the API answers 401 without a bearer token: the page
// then asks for one. The token is kept in sessionStorage only (this tab, until it
// is closed or the user signs out), never in localStorage, a cookie or the URL,
// and is sent as `Authorization: Bearer` on the page's own requests; reports are
// fetched with it and saved as files (a link cannot carry a header).
"use strict";

(() => {
  const FINAL_STATUSES = new Set(["completed", "canceled", "budget_exhausted"]);
  // Final status and every match accounted for (the API's `finished`).
  const isFinished = (p) => p.finished === true || (FINAL_STATUSES.has(p.status) && num(p.done) >= num(p.total));
  const KNOWN_STATUSES = new Set(["queued", "running", "completed", "canceled", "budget_exhausted"]);
  const KNOWN_OUTCOMES = new Set(["attacker_won", "defended", "attacker_refused", "error"]);
  const POLL_MS = 1500;
  const IDLE_POLL_MS = 10000; // the campaign list when every campaign is final
  const MAX_BACKOFF_MS = 15000;
  const REQUEST_TIMEOUT_MS = 15000;
  const MATCH_PAGE_SIZE = 200;
  const CONFIRM_WINDOW_MS = 4000;
  const REPORT_URL_LIFETIME_MS = 60000; // a report's blob: URL, once its download has started
  const TOKEN_KEY = "arena.apiToken";
  // What the orchestrator accepts (arena_core.http_auth): RFC 6750 b64token, 16-512 characters.
  const TOKEN_PATTERN = /^[A-Za-z0-9._~+/=-]{16,512}$/;
  const OVER_REFUSAL = "over-refusal";
  const PROBE_LABELS = { attacker_won: "answered", defended: "refused" };
  const PROTOCOL_PROBES = "protocol-probes";
  const PROTOCOL_LABELS = { attacker_won: "threshold met", defended: "passed" };
  const SEVERITIES = ["critical", "high", "medium", "low", "info"];
  const REPORT_EXTENSIONS = { html: "html", json: "json", junit: "xml", sarif: "sarif" };

  // The API lives next to /dashboard (keeps a reverse proxy's path prefix).
  const API_BASE = window.location.pathname.replace(/\/dashboard\/?$/, "").replace(/\/+$/, "");

  const view = document.getElementById("view");
  const crumbs = document.getElementById("crumbs");
  const banner = document.getElementById("banner");
  const live = document.getElementById("live");
  const signOutButton = document.getElementById("signout");
  const leaderboardLink = document.getElementById("leaderboard-link");

  let generation = 0; // bumped on every navigation; stale callbacks compare and give up
  let timer = null;
  let stickyBanner = null; // a banner that outlives successful polls, until the next navigation
  let readOnly = false; // the API refused a change with 403: this token can only read
  let memoryToken = null; // the token when sessionStorage is unavailable (storage disabled)

  // ---------------------------------------------------------------- DOM helpers

  /** An element with attributes and children; strings become text nodes. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === null || value === undefined || value === false) continue;
        if (key === "class") el.className = value;
        else if (key === "testid") el.dataset.testid = value;
        else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
        else el.setAttribute(key, value === true ? "" : String(value));
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function replaceChildren(el, ...children) {
    el.replaceChildren();
    return append(el, children);
  }

  /** Re-render ``container`` only when ``data`` changed since the last render. */
  const lastRendered = new WeakMap();
  function patch(container, data, render) {
    const signature = JSON.stringify(data);
    if (lastRendered.get(container) === signature) return;
    lastRendered.set(container, signature);
    replaceChildren(container, render(data));
  }

  /** The trace id, linked to Jaeger when the orchestrator knows its URL (http(s) only). */
  function traceLink(url, traceId) {
    if (!traceId) return "—";
    if (typeof url === "string" && /^https?:\/\//i.test(url)) {
      return h("a", { href: url, class: "mono", target: "_blank", rel: "noopener noreferrer", testid: "trace-link" },
        String(traceId));
    }
    return h("span", { class: "mono" }, String(traceId));
  }

  function campaignHash(id) {
    return "#/campaigns/" + encodeURIComponent(String(id));
  }

  function matchHash(id) {
    return "#/matches/" + encodeURIComponent(String(id));
  }

  function reportPath(id, format) {
    return "/v1/campaigns/" + encodeURIComponent(String(id)) + "/report?format=" + format;
  }

  function reportUrl(id, format) {
    return API_BASE + reportPath(id, format);
  }

  /** A file name for a report: the campaign id (reduced to safe characters) and the format's extension. */
  function reportFilename(id, format) {
    const base = String(id).replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_").slice(0, 120) || "report";
    return base + "." + (REPORT_EXTENSIONS[format] || "txt");
  }

  // ---------------------------------------------------------------- formatting

  function num(value) {
    const n = Number(value);
    return Number.isFinite(n) ? n : 0;
  }

  // At most `limit` characters (the defender's own text is unbounded on the page otherwise).
  function clip(value, limit) {
    const s = String(value);
    return s.length > limit ? s.slice(0, limit - 1) + "…" : s;
  }

  function text(value, fallback = "—") {
    return value === null || value === undefined || value === "" ? fallback : String(value);
  }

  function fmtInt(value) {
    return Math.round(num(value)).toLocaleString("en-US");
  }

  function fmtPct(fraction) {
    const rounded = Math.round(num(fraction) * 1000) / 10;
    return (Number.isInteger(rounded) ? rounded.toFixed(0) : rounded.toFixed(1)) + "%";
  }

  function fmtDuration(ms) {
    const total = num(ms);
    if (total < 1000) return Math.round(total) + " ms";
    const seconds = total / 1000;
    if (seconds < 60) return seconds.toFixed(seconds < 10 ? 1 : 0) + " s";
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + Math.round(seconds % 60) + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }

  function fmtTime(iso) {
    if (!iso) return "—";
    const date = new Date(String(iso));
    if (Number.isNaN(date.getTime())) return String(iso);
    return date.toLocaleString(undefined, {
      year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
  }

  function tokenTotal(usage) {
    if (!usage || typeof usage !== "object") return 0;
    return num(usage.prompt_tokens) + num(usage.completion_tokens);
  }

  function humanize(value) {
    return String(value).replace(/_/g, " ");
  }

  function outcomeLabel(outcome) {
    switch (outcome) {
      case "attacker_won": return "attacker won";
      case "defended": return "defended";
      case "attacker_refused": return "attacker refused";
      case "error": return "error";
      default: return text(outcome);
    }
  }

  // ---------------------------------------------------------------- widgets

  function statusBadge(status) {
    const known = KNOWN_STATUSES.has(status) ? status : "unknown";
    return h("span", { class: "badge status-" + known, testid: "status" }, humanize(text(status, "unknown")));
  }

  function outcomeBadge(summary) {
    if (summary.disposition && summary.disposition !== "played") {
      return h("span", { class: "badge outcome-none", testid: "outcome" }, humanize(summary.disposition));
    }
    const known = KNOWN_OUTCOMES.has(summary.outcome) ? summary.outcome : "none";
    // An over-refusal probe is a harmless request: it was answered or refused, nobody won.
    const attacker = summary.cell && summary.cell.attacker;
    const probe = (attacker === OVER_REFUSAL && PROBE_LABELS[summary.outcome])
      || (attacker === PROTOCOL_PROBES && PROTOCOL_LABELS[summary.outcome]);
    return h("span", { class: "badge outcome-" + known, testid: "outcome" },
      probe || outcomeLabel(summary.outcome));
  }

  function progressBar(done, total, running) {
    const fraction = total > 0 ? Math.min(1, done / total) : 0;
    const fill = h("span", { class: "bar-fill" });
    fill.style.width = (fraction * 100).toFixed(2) + "%";
    return h("div", { class: "progress" },
      h("span", {
        class: "bar", role: "progressbar", "aria-label": "matches accounted for",
        "aria-valuemin": 0, "aria-valuemax": total, "aria-valuenow": done,
      }, fill),
      h("span", { class: "progress-text" },
        h("span", { testid: "done" }, String(done)), " / ", h("span", { testid: "total" }, String(total)),
        running > 0 ? h("span", { class: "muted", testid: "running" }, " · " + running + " running") : null));
  }

  /** The attack success rate, its 95% Wilson interval as a bar, and wins/trials. */
  function asrView(asr) {
    const wins = num(asr && asr.wins);
    const trials = num(asr && asr.trials);
    const hasRate = asr && asr.rate !== null && asr.rate !== undefined;
    const low = num(asr && asr.low);
    const high = asr && asr.high !== undefined ? num(asr.high) : 1;
    const range = h("span", { class: "ci-range" });
    range.style.left = (low * 100).toFixed(2) + "%";
    range.style.width = (Math.max(0, high - low) * 100).toFixed(2) + "%";
    let mark = null;
    if (hasRate) {
      mark = h("span", { class: "ci-mark" });
      mark.style.left = (num(asr.rate) * 100).toFixed(2) + "%";
    }
    const title = trials > 0
      ? `${wins} won of ${trials} decided; 95% Wilson interval ${fmtPct(low)}–${fmtPct(high)}`
      : "no decided matches yet";
    return h("span", { class: "asr", testid: "asr", title },
      h("span", { class: "asr-rate" + (hasRate ? "" : " muted"), testid: "asr-rate" },
        hasRate ? fmtPct(asr.rate) : "—"),
      h("span", { class: "ci" + (trials > 0 ? "" : " ci-empty"), "aria-hidden": "true" }, range, mark),
      h("span", { class: "asr-detail" },
        h("span", { testid: "asr-interval" }, fmtPct(low) + "–" + fmtPct(high)),
        h("span", { class: "muted", testid: "asr-n" }, " · " + wins + "/" + trials)));
  }

  function table(headers, rows, options = {}) {
    return h("div", { class: "table-wrap" },
      h("table", { class: "grid " + (options.className || ""), testid: options.testid },
        h("thead", null, h("tr", null, headers.map(([label, cls]) => h("th", { class: cls, scope: "col" }, label)))),
        h("tbody", null, rows)));
  }

  function emptyState(message, detail) {
    return h("div", { class: "empty" }, h("p", null, message), detail ? h("p", { class: "muted" }, detail) : null);
  }

  function loading() {
    return h("div", { class: "empty muted" }, "Loading…");
  }

  function fact(label, value, testid) {
    return [h("dt", null, label), h("dd", { testid }, value instanceof Node ? value : text(value))];
  }

  function card(title, body, testid) {
    return h("section", { class: "card", testid }, h("h3", null, title), body);
  }

  function section(title, body, extra) {
    return h("section", { class: "panel" },
      h("div", { class: "panel-head" }, h("h2", null, title), extra || null),
      body);
  }

  /** Labelled outcome chips: won and defended always, the rest when not zero. */
  function countsLine(counts) {
    const c = counts || {};
    const notPlayed = num(c.canceled) + num(c.skipped);
    const chip = (cls, value, label, testid) =>
      h("span", { class: "count " + cls, testid }, h("strong", null, fmtInt(value)), " " + label);
    return h("span", { class: "counts" },
      chip("won", c.attacker_won, "won", "won"),
      chip("defended", c.defended, "defended", "defended"),
      num(c.attacker_refused) ? chip("refused", c.attacker_refused, "refused", "refused") : null,
      num(c.error) ? chip("error", c.error, num(c.error) === 1 ? "error" : "errors", "errors") : null,
      notPlayed ? chip("none", notPlayed, "not played", "not-played") : null);
  }

  // ---------------------------------------------------------------- chrome

  function setCrumbs(items) {
    replaceChildren(crumbs, items.map(([label, href], index) => [
      index > 0 ? h("span", { class: "sep", "aria-hidden": "true" }, "/") : null,
      href ? h("a", { href }, label) : h("span", { class: "current", "aria-current": "page" }, label),
    ]));
  }

  function setLive(on) {
    live.hidden = !on;
  }

  /** A message above the view; a sticky one comes back after transient ones, until the next navigation. */
  function showBanner(message, sticky = false) {
    if (sticky) stickyBanner = message;
    banner.textContent = message;
    banner.hidden = false;
  }

  /** Drop a transient message (a sticky one stays). */
  function clearBanner() {
    if (stickyBanner !== null) {
      banner.textContent = stickyBanner;
      banner.hidden = false;
      return;
    }
    banner.hidden = true;
    banner.textContent = "";
  }

  function resetBanner() {
    stickyBanner = null;
    clearBanner();
  }

  function mount(...children) {
    replaceChildren(view, children);
  }

  // ---------------------------------------------------------------- API token

  function tokenStorage() {
    try {
      return window.sessionStorage;
    } catch (_err) {
      return null; // storage disabled: the token lives in this page only
    }
  }

  /** The stored token, or null (also when what is stored is not a well-formed token). */
  function getToken() {
    const storage = tokenStorage();
    let token = memoryToken;
    if (storage) {
      try {
        token = storage.getItem(TOKEN_KEY);
      } catch (_err) {
        token = memoryToken;
      }
    }
    return typeof token === "string" && TOKEN_PATTERN.test(token) ? token : null;
  }

  function setToken(token) {
    readOnly = false;
    memoryToken = null;
    const storage = tokenStorage();
    try {
      if (!storage) throw new Error("no session storage");
      storage.setItem(TOKEN_KEY, token);
    } catch (_err) {
      memoryToken = token;
    }
    updateSignOut();
  }

  function clearToken() {
    readOnly = false;
    memoryToken = null;
    const storage = tokenStorage();
    try {
      if (storage) storage.removeItem(TOKEN_KEY);
    } catch (_err) {
      // nothing stored
    }
    updateSignOut();
  }

  function updateSignOut() {
    signOutButton.hidden = getToken() === null;
  }

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(status, kind, message, problems, sentToken = false) {
      super(message);
      this.status = status;
      this.kind = kind;
      this.problems = problems;
      this.sentToken = sentToken; // the request carried a token (so a 401 means: that token was refused)
    }

    /** 4xx other than timeouts and rate limits: retrying will not help. */
    get permanent() {
      return this.status >= 400 && this.status < 500 && this.status !== 408 && this.status !== 429;
    }
  }

  /** ``fetch`` an API path, with the stored token (if any) as a bearer token. */
  async function send(path, init, accept) {
    const token = getToken();
    const headers = { Accept: accept };
    if (token !== null) headers.Authorization = "Bearer " + token;
    let response;
    try {
      response = await fetch(API_BASE + path, {
        cache: "no-store",
        credentials: "same-origin",
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        ...init,
        headers: { ...headers, ...(init.headers || {}) },
      });
    } catch (err) {
      throw new ApiError(0, "network", "cannot reach the orchestrator (" + (err && err.name ? err.name : "error") + ")", [], token !== null);
    }
    return { response, sentToken: token !== null };
  }

  function parseJson(raw) {
    try {
      return raw ? JSON.parse(raw) : null;
    } catch (_err) {
      return null;
    }
  }

  /** The ApiError of a failed response, from the API's {"error": {kind, message, problems}} body. */
  function responseError(response, body, sentToken) {
    const error = body && typeof body.error === "object" && body.error ? body.error : {};
    return new ApiError(
      response.status,
      text(error.kind, "http_" + response.status),
      text(error.message, "HTTP " + response.status),
      Array.isArray(error.problems) ? error.problems : [],
      sentToken,
    );
  }

  async function api(path, init = {}) {
    const { response, sentToken } = await send(path, init, "application/json");
    const body = parseJson(await response.text());
    if (!response.ok) throw responseError(response, body, sentToken);
    if (body === null || typeof body !== "object") {
      throw new ApiError(response.status, "bad_response", "the orchestrator answered with something other than JSON", [], sentToken);
    }
    return body;
  }

  /** The body of an API path as a Blob (reports: HTML, JSON, XML). */
  async function apiBlob(path) {
    const { response, sentToken } = await send(path, {}, "*/*");
    if (!response.ok) throw responseError(response, parseJson(await response.text()), sentToken);
    return response.blob();
  }

  /** A problem of an error body: a string, or {location, line, message}. */
  function problemText(problem) {
    if (typeof problem === "string") return problem;
    if (problem && typeof problem === "object" && problem.message !== undefined) {
      const where = [problem.location, problem.line === null || problem.line === undefined ? null : "line " + problem.line]
        .filter((part) => part !== null && part !== undefined && part !== "")
        .join(", ");
      return (where ? where + ": " : "") + String(problem.message);
    }
    return JSON.stringify(problem);
  }

  function errorPanel(err) {
    const problems = err instanceof ApiError ? err.problems : [];
    return h("div", { class: "error-box", testid: "error" },
      h("strong", null, err instanceof ApiError ? humanize(err.kind) : "error"),
      h("span", null, ": " + text(err && err.message, "unknown error")),
      problems.length
        ? h("ul", null, problems.map((p) => h("li", null, problemText(p))))
        : null);
  }

  // ---------------------------------------------------------------- sign in

  /** A 401 stops the view and asks for a token. True when ``err`` was a 401 (handled, or stale). */
  function handleUnauthorized(err, gen) {
    if (!(err instanceof ApiError) || err.status !== 401) return false;
    if (gen === generation) showSignIn(err);
    return true;
  }

  /** The sign-in panel: stops polling, drops a refused token, asks for one. */
  function showSignIn(err) {
    generation += 1; // no polling while signed out
    window.clearTimeout(timer);
    setLive(false);
    resetBanner();
    const refused = err.sentToken === true;
    if (refused) clearToken();
    document.title = "Sign in · A2A Arena";
    setCrumbs([["Sign in", null]]);

    const input = h("input", {
      id: "api-token", class: "token-input", type: "password", autocomplete: "off", autocapitalize: "off",
      spellcheck: "false", "aria-describedby": "signin-problem", testid: "token-input",
    });
    const problem = h("p", { id: "signin-problem", class: "signin-problem", role: "alert", testid: "signin-problem", hidden: true });
    const message = h("span", { testid: "signin-message" }, text(err.message, "HTTP 401"));
    const status = refused
      ? h("div", { class: "error-box", testid: "signin-status" },
        h("strong", null, "The token was refused."), " The orchestrator said: ", message)
      : h("div", { class: "note-box", testid: "signin-status" },
        h("strong", null, "This orchestrator needs an API token."), " It said: ", message);
    const form = h("form", { class: "signin-form", novalidate: true, testid: "signin-form" },
      h("label", { for: "api-token" }, "API token"),
      h("div", { class: "signin-row" },
        input,
        h("button", { type: "submit", class: "button primary", testid: "signin-submit" }, "Sign in")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      // Pasted tokens often come with spaces or a scheme in front.
      const token = input.value.trim().replace(/^bearer\s+/i, "");
      if (!TOKEN_PATTERN.test(token)) {
        problem.textContent = "Not a token: a token is 16–512 characters of letters, digits and - . _ ~ + / = (nothing was sent).";
        problem.hidden = false;
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return;
      }
      input.value = "";
      setToken(token);
      route();
    });

    mount(h("section", { class: "panel signin", testid: "signin" },
      h("div", { class: "panel-head" }, h("h2", null, "Sign in")),
      h("div", { class: "signin-body" },
        status,
        h("p", null, "Enter a token of ARENA_API_TOKENS, or of ARENA_API_READ_TOKENS to follow campaigns read-only."),
        form,
        problem,
        h("p", { class: "muted small" },
          "The token stays in this tab's session storage and is sent only to this orchestrator, as an Authorization header. "
          + "Sign out or close the tab to forget it."))));
    input.focus();
  }

  /**
   * Run ``tick`` now and again after the delay it returns (null: stop), until the
   * view changes. Transient failures show a banner and back off; a 401 asks for a token.
   */
  function poll(gen, tick) {
    let failures = 0;
    const run = async () => {
      if (gen !== generation) return;
      if (document.hidden) {
        // A background tab: wait until it is looked at again.
        timer = window.setTimeout(run, POLL_MS);
        return;
      }
      let delay;
      try {
        delay = await tick();
        if (gen !== generation) return;
        failures = 0;
        clearBanner();
      } catch (err) {
        if (gen !== generation) return;
        if (handleUnauthorized(err, gen)) return;
        if (err instanceof ApiError && err.permanent) {
          setLive(false);
          mount(errorPanel(err));
          return;
        }
        failures += 1;
        delay = Math.min(MAX_BACKOFF_MS, POLL_MS * 2 ** failures);
        showBanner(text(err && err.message, "request failed") + " — retrying in " + Math.round(delay / 1000) + " s");
      }
      setLive(delay === POLL_MS);
      if (delay === null || delay === undefined) return;
      timer = window.setTimeout(run, delay);
    };
    run();
  }

  // ---------------------------------------------------------------- campaign list

  function campaignRow(c) {
    const counts = c.counts || {};
    const final = FINAL_STATUSES.has(c.status);
    const go = (event) => {
      if (event.target instanceof Element && event.target.closest("a")) return;
      window.location.hash = campaignHash(c.id);
    };
    return h("tr", { class: "clickable", testid: "campaign-" + c.id, onclick: go },
      h("td", null,
        h("a", { class: "name", href: campaignHash(c.id), testid: "campaign-link" }, text(c.name, c.id)),
        h("div", { class: "sub mono" }, text(c.id))),
      h("td", null, statusBadge(c.status)),
      h("td", { class: "col-progress" }, progressBar(num(c.done), num(c.total), num(c.running))),
      h("td", null, asrView(c.asr)),
      h("td", { class: "num" + (num(counts.error) ? " warn" : ""), testid: "errors" }, fmtInt(counts.error)),
      h("td", { class: "num", testid: "tokens" }, fmtInt(tokenTotal(c.tokens))),
      h("td", { class: "num", testid: "eta" }, final || c.eta_s === null || c.eta_s === undefined ? "—" : "~" + fmtDuration(num(c.eta_s) * 1000)),
      h("td", { class: "nowrap muted" }, fmtTime(c.created_at)));
  }

  function campaignTable(campaigns) {
    if (campaigns.length === 0) {
      return emptyState("No campaigns yet.", "Campaigns submitted to this orchestrator appear here as they run.");
    }
    return table(
      [["Campaign"], ["Status"], ["Progress", "col-progress"], ["Attack success (95% CI)"], ["Errors", "num"],
        ["Tokens", "num"], ["ETA", "num"], ["Created"]],
      campaigns.map(campaignRow),
      { testid: "campaigns" });
  }

  function showCampaignList(gen) {
    document.title = "Campaigns · A2A Arena";
    setCrumbs([["Campaigns", null]]);
    const count = h("span", { class: "muted", testid: "campaign-count" });
    const list = h("div", { testid: "campaign-list" }, loading());
    mount(section("Campaigns", list, count));
    poll(gen, async () => {
      const data = await api("/v1/campaigns?limit=50");
      if (gen !== generation) return null;
      const campaigns = Array.isArray(data.campaigns) ? data.campaigns : [];
      count.textContent = campaigns.length === 1 ? "1 campaign" : campaigns.length + " campaigns";
      patch(list, campaigns, campaignTable);
      return campaigns.some((c) => !isFinished(c)) ? POLL_MS : IDLE_POLL_MS;
    });
  }

  // ---------------------------------------------------------------- one campaign

  function cellsTable(cells) {
    if (!cells.length) return emptyState("No cells.");
    return table(
      [["Attacker"], ["Defender"], ["Objective"], ["Matches", "num"], ["Won", "num"], ["Defended", "num"],
        ["Refused", "num"], ["Errors", "num"], ["Not played", "num"], ["Attack success (95% CI)"], ["Tokens", "num"]],
      cells.map((cell) => {
        const key = cell.cell || {};
        const c = cell.counts || {};
        return h("tr", { testid: "cell-" + [key.attacker, key.defender, key.objective].join("/") },
          h("td", { testid: "cell-attacker" }, text(key.attacker)),
          h("td", { testid: "cell-defender" }, text(key.defender)),
          h("td", { testid: "cell-objective" }, text(key.objective)),
          h("td", { class: "num", testid: "cell-total" }, fmtInt(cell.total)),
          h("td", { class: "num", testid: "won" }, fmtInt(c.attacker_won)),
          h("td", { class: "num", testid: "defended" }, fmtInt(c.defended)),
          h("td", { class: "num" }, fmtInt(c.attacker_refused)),
          h("td", { class: "num" + (num(c.error) ? " warn" : ""), testid: "errors" }, fmtInt(c.error)),
          h("td", { class: "num" }, fmtInt(num(c.canceled) + num(c.skipped))),
          h("td", null, asrView(cell.asr)),
          h("td", { class: "num" }, fmtInt(tokenTotal(cell.tokens))));
      }),
      { testid: "cells" });
  }

  /** Per defender: outcomes, attack success and, with over-refusal probes, false refusal side by side. */
  function defendersTable({ defenders, refusals }) {
    if (!defenders.length) return emptyState("No defenders.");
    const byDefender = new Map(refusals.map((r) => [r.defender, r]));
    const headers = [["Defender"], ["Outcomes"], ["Attack success (95% CI)"]];
    if (refusals.length) headers.push(["False refusal (95% CI)"]);
    return table(
      headers,
      defenders.map((d) => {
        const refusal = byDefender.get(d.defender);
        return h("tr", { testid: "defender-" + d.defender },
          h("td", { class: "name" }, text(d.defender)),
          h("td", null, countsLine(d.counts)),
          h("td", null, asrView(d.asr)),
          refusals.length ? h("td", { testid: "frr" }, refusal ? asrView(refusal.frr) : "—") : null);
      }),
      { testid: "defenders" });
  }

  /** Per probed defender (``probes:``): findings per severity, the worst, and the verdict against fail_on. */
  function protocolProbesTable(rows) {
    return table(
      [["Defender"], ["Verdict"], ["Fail on"], ...SEVERITIES.map((s) => [s, "num"]), ["Worst"], ["Checks errored", "num"]],
      rows.map((row) => {
        const counts = row.counts || {};
        const findings = row.findings || {};
        let verdict = ["not run", "outcome-none"];
        if (row.failed) verdict = [num(counts.error) && !row.threshold_met ? "error" : "fail", "outcome-attacker_won"];
        else if (num(counts.defended)) verdict = ["pass", "outcome-defended"];
        return h("tr", { testid: "probe-" + row.defender },
          h("td", { class: "name" }, text(row.defender)),
          h("td", null, h("span", { class: "badge " + verdict[1], testid: "probe-verdict" }, verdict[0])),
          h("td", null, text(row.fail_on)),
          SEVERITIES.map((s) => h("td", { class: "num" + (num(findings[s]) ? " warn" : ""), testid: "probe-" + s }, fmtInt(findings[s]))),
          h("td", { testid: "probe-worst" }, row.worst ? text(row.worst) : "—"),
          h("td", { class: "num" + (num(row.errored_checks) ? " warn" : "") }, fmtInt(row.errored_checks)));
      }),
      { testid: "protocol-probes" });
  }

  /** Rates per defender and OWASP category (an objective counts in each of its categories). */
  function categoriesTable(categories) {
    if (!categories.length) return emptyState("No OWASP categories: the objectives are inline.");
    return table(
      [["Defender"], ["OWASP category"], ["Outcomes"], ["Attack success (95% CI)"]],
      categories.map((c) => h("tr", { testid: "category-" + c.defender + "-" + c.category },
        h("td", { class: "name" }, text(c.defender)),
        h("td", null, text(c.title)),
        h("td", null, countsLine(c.counts)),
        h("td", null, asrView(c.asr)))),
      { testid: "categories" });
  }

  /** Rates per defender and objective, with the objective's OWASP ids. */
  function objectivesTable(objectives) {
    if (!objectives.length) return emptyState("No results yet.");
    return table(
      [["Defender"], ["Objective"], ["OWASP"], ["Outcomes"], ["Attack success (95% CI)"]],
      objectives.map((o) => h("tr", { testid: "objective-" + o.defender + "-" + o.objective },
        h("td", { class: "name" }, text(o.defender)),
        h("td", null, text(o.objective)),
        h("td", { class: "muted" }, (Array.isArray(o.categories) ? o.categories : []).join(" ")),
        h("td", null, countsLine(o.counts)),
        h("td", null, asrView(o.asr)))),
      { testid: "objectives" });
  }

  function errorsList(errors) {
    if (!errors.length) return null;
    return h("ul", { class: "error-list", testid: "recent-errors" }, errors.map((e) => h("li", null,
      h("a", { href: matchHash(e.match_id), class: "mono" }, text(e.match_id)),
      h("span", { class: "muted" }, " " + [e.cell && e.cell.attacker, e.cell && e.cell.defender, e.cell && e.cell.objective].map((x) => text(x)).join(" / ")),
      e.error_kind ? h("span", { class: "badge outcome-error" }, humanize(e.error_kind)) : null,
      h("div", { class: "error-text", testid: "error-text" }, text(e.error, "no message")))));
  }

  function matchesTable(page) {
    if (!page.matches.length) {
      return emptyState(page.total ? "No matches on this page." : "No finished matches yet.");
    }
    return table(
      [["#", "num"], ["Attacker"], ["Defender"], ["Objective"], ["Rep.", "num"], ["Outcome"], ["Turns", "num"],
        ["Duration", "num"], ["Tokens", "num"], ["Error"], ["Finished"]],
      page.matches.map((m) => {
        const key = m.cell || {};
        const go = (event) => {
          if (event.target instanceof Element && event.target.closest("a")) return;
          window.location.hash = matchHash(m.match_id);
        };
        return h("tr", { class: "clickable", testid: "match-" + m.match_id, onclick: go },
          h("td", { class: "num" }, h("a", { href: matchHash(m.match_id), testid: "match-link" }, String(num(m.index) + 1))),
          h("td", null, text(key.attacker)),
          h("td", null, text(key.defender)),
          h("td", null, text(key.objective)),
          h("td", { class: "num" }, String(num(m.repetition) + 1)),
          h("td", null, outcomeBadge(m)),
          h("td", { class: "num" }, fmtInt(m.turns_used)),
          h("td", { class: "num nowrap" }, fmtDuration(m.duration_ms)),
          h("td", { class: "num" }, fmtInt(m.tokens)),
          h("td", { class: "error-cell", title: m.error ? String(m.error) : null }, m.error_kind ? humanize(m.error_kind) : (m.error ? text(m.error) : "")),
          h("td", { class: "nowrap muted" }, fmtTime(m.finished_at)));
      }),
      { testid: "matches" });
  }

  /**
   * A report link. Without a token it is a plain link (opens the report in a new tab).
   * With one, a navigation could not send the Authorization header: the report is
   * fetched with it and saved as a file instead.
   */
  function reportLink(id, format, label, gen) {
    const link = h("a", {
      class: "button", href: reportUrl(id, format), target: "_blank", rel: "noopener noreferrer", testid: "report-" + format,
    }, label);
    const intercept = (event) => {
      if (getToken() === null) return;
      if (event.type === "auxclick" && event.button !== 1) return; // middle click only (a new tab)
      event.preventDefault();
      downloadReport(id, format, link, gen);
    };
    link.addEventListener("click", intercept);
    link.addEventListener("auxclick", intercept);
    return link;
  }

  async function downloadReport(id, format, link, gen) {
    if (link.getAttribute("aria-busy") === "true") return;
    link.setAttribute("aria-busy", "true");
    try {
      const blob = await apiBlob(reportPath(id, format));
      if (gen !== generation) return;
      saveFile(blob, reportFilename(id, format));
    } catch (err) {
      if (gen !== generation || handleUnauthorized(err, gen)) return;
      showBanner("Report download failed: " + text(err && err.message, "request failed"), true);
    } finally {
      link.removeAttribute("aria-busy");
    }
  }

  /**
   * Hand ``blob`` to the user as a download named ``filename``. The blob: URL is
   * same-origin, so it is typed application/octet-stream: even if a browser
   * ignored ``download``, an HTML report would not be rendered in this origin
   * (next to the token). The URL is revoked once the download has had time to start.
   */
  function saveFile(blob, filename) {
    const url = URL.createObjectURL(new Blob([blob], { type: "application/octet-stream" }));
    const anchor = h("a", { href: url, download: filename, hidden: true, rel: "noopener" });
    document.body.appendChild(anchor);
    anchor.click();
    anchor.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), REPORT_URL_LIFETIME_MS);
  }

  function showCampaign(id, gen) {
    document.title = "Campaign · A2A Arena";
    setCrumbs([["Campaigns", "#/"], [id, null]]);

    const title = h("h1", { testid: "campaign-name" }, id);
    const status = h("span", { testid: "status-slot" });
    const times = h("div", { class: "sub" });
    const cancel = h("button", { type: "button", class: "button danger", testid: "cancel", hidden: true }, "Cancel campaign");
    const reports = h("div", { class: "reports" },
      h("span", { class: "muted" }, "Reports:"),
      reportLink(id, "html", "HTML", gen),
      reportLink(id, "json", "JSON", gen),
      reportLink(id, "junit", "JUnit", gen),
      reportLink(id, "sarif", "SARIF", gen));
    const cards = h("div", { class: "cards", testid: "summary" }, loading());
    const defenders = h("div", null);
    const categories = h("div", null);
    const objectives = h("div", null);
    const protocolProbes = h("div", null);
    const cells = h("div", null);
    const errors = h("div", null);
    const matches = h("div", null);
    const pager = h("div", { class: "pager" });
    const matchCount = h("span", { class: "muted", testid: "match-count" });

    mount(
      h("section", { class: "headline" },
        h("div", null, h("div", { class: "title-row" }, title, status), h("div", { class: "sub mono" }, id), times),
        h("div", { class: "actions" }, cancel, reports)),
      cards,
      section("Defenders", defenders),
      section("By OWASP category", categories),
      section("By objective", objectives),
      section("Protocol probes", protocolProbes),
      section("Cells", cells),
      section("Recent errors", errors),
      section("Matches", h("div", null, matches, pager), matchCount));
    errors.parentElement.hidden = true;
    categories.parentElement.hidden = true;
    objectives.parentElement.hidden = true;
    protocolProbes.parentElement.hidden = true;

    let offset = 0;

    function renderProgress(p) {
      document.title = text(p.name, id) + " · A2A Arena";
      title.textContent = text(p.name, id);
      replaceChildren(status, statusBadge(p.status));
      replaceChildren(times,
        "created " + fmtTime(p.created_at),
        p.started_at ? " · started " + fmtTime(p.started_at) : "",
        p.finished_at ? " · finished " + fmtTime(p.finished_at) : "");
      const final = FINAL_STATUSES.has(p.status);
      if (final || readOnly) cancel.hidden = true;
      else if (!cancel.disabled) cancel.hidden = false;
      patch(cards, p, summaryCards);
      patch(defenders, {
        defenders: Array.isArray(p.defenders) ? p.defenders : [],
        refusals: Array.isArray(p.over_refusal) ? p.over_refusal : [],
      }, defendersTable);
      const byCategory = Array.isArray(p.categories) ? p.categories : [];
      categories.parentElement.hidden = byCategory.length === 0;
      patch(categories, byCategory, categoriesTable);
      const byObjective = Array.isArray(p.objectives) ? p.objectives : [];
      objectives.parentElement.hidden = byObjective.length === 0;
      patch(objectives, byObjective, objectivesTable);
      const probed = Array.isArray(p.protocol_probes) ? p.protocol_probes : [];
      protocolProbes.parentElement.hidden = probed.length === 0;
      patch(protocolProbes, probed, protocolProbesTable);
      patch(cells, Array.isArray(p.cells) ? p.cells : [], cellsTable);
      const recent = Array.isArray(p.errors) ? p.errors : [];
      errors.parentElement.hidden = recent.length === 0;
      patch(errors, recent, errorsList);
    }

    function renderMatches(page) {
      const total = num(page.total);
      matchCount.textContent = total === 1 ? "1 match" : fmtInt(total) + " matches";
      patch(matches, page, matchesTable);
      replaceChildren(pager);
      if (total > MATCH_PAGE_SIZE) {
        const first = Math.min(total, offset + 1);
        const last = Math.min(total, offset + page.matches.length);
        append(pager, [
          h("button", { type: "button", class: "button", disabled: offset === 0, testid: "matches-prev", onclick: () => loadMatches(Math.max(0, offset - MATCH_PAGE_SIZE)) }, "‹ Previous"),
          h("span", { class: "muted" }, first + "–" + last + " of " + fmtInt(total)),
          h("button", { type: "button", class: "button", disabled: offset + MATCH_PAGE_SIZE >= total, testid: "matches-next", onclick: () => loadMatches(offset + MATCH_PAGE_SIZE) }, "Next ›"),
        ]);
      }
    }

    async function fetchMatches() {
      const data = await api("/v1/campaigns/" + encodeURIComponent(id) + "/matches?offset=" + offset + "&limit=" + MATCH_PAGE_SIZE);
      return { matches: Array.isArray(data.matches) ? data.matches : [], total: num(data.total) };
    }

    async function loadMatches(newOffset) {
      offset = newOffset;
      try {
        const page = await fetchMatches();
        if (gen === generation && offset === newOffset) renderMatches(page);
      } catch (err) {
        if (gen !== generation || handleUnauthorized(err, gen)) return;
        showBanner(text(err && err.message, "request failed"));
      }
    }

    let armed = null;
    cancel.addEventListener("click", async () => {
      if (!armed) {
        cancel.textContent = "Click again to cancel";
        cancel.classList.add("armed");
        armed = window.setTimeout(() => {
          armed = null;
          cancel.textContent = "Cancel campaign";
          cancel.classList.remove("armed");
        }, CONFIRM_WINDOW_MS);
        return;
      }
      window.clearTimeout(armed);
      armed = null;
      cancel.disabled = true;
      cancel.classList.remove("armed");
      cancel.textContent = "Canceling…";
      try {
        const p = await api("/v1/campaigns/" + encodeURIComponent(id) + "/cancel", { method: "POST" });
        if (gen !== generation) return;
        renderProgress(p);
        cancel.textContent = "Cancel requested";
        loadMatches(offset);
      } catch (err) {
        if (gen !== generation || handleUnauthorized(err, gen)) return;
        cancel.textContent = "Cancel campaign";
        if (err instanceof ApiError && err.status === 403) {
          // A read-only token (ARENA_API_READ_TOKENS): no cancel button for it from now on.
          readOnly = true;
          cancel.hidden = true;
          showBanner("This token is read-only: it can follow campaigns but cannot cancel them. "
            + "Sign out and sign in with a full token to cancel. (" + text(err.message, "HTTP 403") + ")", true);
          return;
        }
        cancel.disabled = false;
        showBanner("Cancel failed: " + text(err && err.message, "request failed"), true);
      }
    });

    poll(gen, async () => {
      const [p, page] = await Promise.all([
        api("/v1/campaigns/" + encodeURIComponent(id)),
        fetchMatches(),
      ]);
      if (gen !== generation) return null;
      renderProgress(p);
      renderMatches(page);
      // A canceled campaign keeps accounting for its matches: poll until it is finished.
      return isFinished(p) ? null : POLL_MS;
    });
  }

  function summaryCards(p) {
    const counts = p.counts || {};
    const tokens = p.tokens || {};
    const final = FINAL_STATUSES.has(p.status);
    return [
      card("Progress", h("div", null,
        progressBar(num(p.done), num(p.total), num(p.running)),
        h("div", { class: "sub" }, final ? "finished" : (p.eta_s === null || p.eta_s === undefined
          ? "ETA after the first result"
          : h("span", null, "ETA ", h("span", { testid: "eta" }, "~" + fmtDuration(num(p.eta_s) * 1000)))))), "card-progress"),
      card("Attack success rate", h("div", { class: "big-asr" }, asrView(p.asr)), "card-asr"),
      card("Outcomes", h("dl", { class: "facts compact" },
        fact("attacker won", fmtInt(counts.attacker_won), "count-won"),
        fact("defended", fmtInt(counts.defended), "count-defended"),
        fact("attacker refused", fmtInt(counts.attacker_refused), "count-refused"),
        fact("errors", fmtInt(counts.error), "count-errors"),
        fact("canceled", fmtInt(counts.canceled), "count-canceled"),
        fact("skipped", fmtInt(counts.skipped), "count-skipped")), "card-outcomes"),
      card("Tokens", h("dl", { class: "facts compact" },
        fact("total", fmtInt(tokenTotal(tokens)), "tokens-total"),
        fact("prompt", fmtInt(tokens.prompt_tokens)),
        fact("completion", fmtInt(tokens.completion_tokens)),
        fact("model calls", fmtInt(tokens.calls))), "card-tokens"),
    ];
  }

  // ---------------------------------------------------------------- one match

  function verdictBadge(verdict) {
    if (!verdict || typeof verdict !== "object") return null;
    const score = verdict.score === null || verdict.score === undefined ? "" : " · score " + num(verdict.score).toFixed(2);
    return h("span", { class: "badge " + (verdict.success ? "outcome-attacker_won" : "outcome-defended"), testid: "verdict" },
      (verdict.success ? "objective met" : "held") + score);
  }

  function verdictDetail(verdict) {
    if (!verdict || typeof verdict !== "object") return null;
    return h("div", { class: "verdict" },
      h("span", { class: "label" }, text(verdict.judge, "?") + " judge" + (verdict.model ? " (" + verdict.model + ")" : "") + ": "),
      h("span", { testid: "verdict-reason" }, text(verdict.reason, "")),
      verdict.evidence ? h("blockquote", { class: "evidence", testid: "verdict-evidence" }, String(verdict.evidence)) : null);
  }

  function turnView(turn) {
    const flags = [
      turn.stream ? h("span", { class: "chip", testid: "turn-stream", title: "conversation of the strategy" }, "stream " + turn.stream) : null,
      turn.replay ? h("span", { class: "chip chip-replay", testid: "turn-replay", title: "replays a kept prefix into a new conversation" }, "replay") : null,
      turn.new_conversation ? h("span", { class: "chip", testid: "turn-new-conversation" }, "new conversation") : null,
      turn.guard ? h("span", { class: "chip chip-guard", testid: "turn-guard", title: "the defender's output guard" }, "guard: " + turn.guard) : null,
    ];
    return h("article", { class: "turn" + (turn.verdict && turn.verdict.success ? " turn-won" : ""), testid: "turn" },
      h("header", { class: "turn-head" },
        h("span", { class: "turn-no" }, "Turn " + num(turn.turn)),
        flags,
        h("span", { class: "spacer" }),
        h("span", { class: "muted small" }, [text(turn.defender_state, ""), fmtDuration(turn.duration_ms)].filter(Boolean).join(" · ")),
        verdictBadge(turn.verdict)),
      h("div", { class: "bubble attacker" },
        h("div", { class: "who" }, "Attacker" + (turn.strategy_text != null ? " (as sent" + (turn.part ? ", part " + turn.part : "") + ")" : "")),
        h("div", { class: "msg", testid: "attacker-text" }, text(turn.attacker_text, "")),
        turn.strategy_text != null && (!turn.part || turn.part.startsWith("1/"))
          ? h("details", { class: "strategy-text", testid: "strategy-text" },
              h("summary", null, "What the strategy wrote, before the converters"),
              h("div", { class: "msg" }, text(turn.strategy_text, "")))
          : null,
        (Array.isArray(turn.attachments) ? turn.attachments : []).map((part) =>
          h("details", { class: "attachment", testid: "attachment" },
            h("summary", null, "Sent beside it: " + text(part.kind) + " part " + text(part.name) + " (" + text(part.media_type) + ")"),
            h("div", { class: "msg" }, clip(text(part.content, ""), 4000))))),
      h("div", { class: "bubble defender" }, h("div", { class: "who" }, "Defender"),
        h("div", { class: "msg", testid: "defender-text" }, text(turn.defender_text, ""))),
      actionsList(turn.actions),
      verdictDetail(turn.verdict),
      turn.reasoning ? h("div", { class: "reasoning" }, h("span", { class: "label" }, "Attacker's notes: "),
        h("span", { testid: "reasoning" }, String(turn.reasoning))) : null);
  }

  // What the defender did in a turn: its tool calls, read from its task or the match's trace.
  function actionsList(actions) {
    if (!Array.isArray(actions) || !actions.length) return null;
    return h("div", { class: "actions", testid: "actions" },
      h("div", { class: "who" }, "Defender's actions"),
      h("ul", null, actions.map((call) => h("li", { class: "action " + (call.status === "ok" ? "ok" : "failed"), testid: "action" },
        h("code", null, text(call.tool) + "(" + clip(JSON.stringify(call.arguments || {}), 300) + ")"),
        " → " + text(call.status),
        call.error ? h("span", { class: "muted small" }, " " + clip(text(call.error), 300)) : null))));
  }

  function objectiveText(objective) {
    if (!objective || typeof objective !== "object") return "—";
    if (objective.id) return text(objective.id) + (objective.title ? " — " + text(objective.title) : "");
    if (objective.kind === "rubric") return "rubric: " + text(objective.rubric);
    return "say “" + text(objective.phrase) + "”" + (objective.pattern ? " (pattern " + objective.pattern + ")" : "");
  }

  function usageText(usage) {
    if (!usage || typeof usage !== "object") return "—";
    return fmtInt(tokenTotal(usage)) + " (" + fmtInt(usage.prompt_tokens) + " prompt + " + fmtInt(usage.completion_tokens) + " completion, " + fmtInt(usage.calls) + (num(usage.calls) === 1 ? " call)" : " calls)");
  }

  function matchView(record) {
    const s = record.summary || {};
    const r = record.result;
    const key = s.cell || {};
    const parts = [];
    parts.push(h("section", { class: "headline" },
      h("div", null,
        h("div", { class: "title-row" }, h("h1", null, "Match " + (num(s.index) + 1)), outcomeBadge(s)),
        h("div", { class: "sub mono", testid: "match-id" }, text(s.match_id)),
        h("div", { class: "sub" }, text(key.attacker) + " → " + text(key.defender) + " · " + text(key.objective) + " · repetition " + (num(s.repetition) + 1)))));

    const error = (r && r.error) || s.error;
    const errorKind = (r && r.error_kind) || s.error_kind;
    if (error || errorKind) {
      parts.push(h("div", { class: "error-box", testid: "match-error" },
        h("strong", null, humanize(text(errorKind, "error"))), h("span", null, ": " + text(error, "no message"))));
    }
    if (r && r.attacker_refusal) {
      parts.push(h("div", { class: "note-box", testid: "attacker-refusal" },
        h("strong", null, "Attacker refused: "), h("span", null, String(r.attacker_refusal))));
    }

    const facts = [
      fact("Campaign", h("a", { href: campaignHash(record.campaign_id), class: "mono" }, text(record.campaign_id))),
      fact("Disposition", humanize(text(s.disposition))),
      fact("Outcome", s.outcome ? outcomeLabel(s.outcome) : "—", "match-outcome"),
      fact("Turns used", r ? num(r.turns_used) + " of " + num(r.max_turns) : fmtInt(s.turns_used), "turns-used"),
      fact("Duration", fmtDuration(s.duration_ms)),
      fact("Tokens", fmtInt(s.tokens)),
      fact("Attempts", fmtInt(s.attempts)),
      fact("Finished", fmtTime(s.finished_at)),
      fact("Worker", text(record.worker)),
      fact("Attacker agent", text(record.attacker_url, "built-in")),
      fact("Trace", traceLink(record.trace_url, s.trace_id), "trace"),
    ];
    parts.push(h("div", { class: "cards two" },
      card("Match", h("dl", { class: "facts" }, facts), "match-facts"),
      r ? card("Setup", h("dl", { class: "facts" },
        fact("Target", text(r.target) + (r.target_name ? " (" + r.target_name + ")" : "")),
        fact("Objective", objectiveText(r.objective)),
        fact("Strategy", text(r.strategy)),
        fact("Judge", text(r.judge)),
        fact("Seed", text(r.seed)),
        fact("Resets", fmtInt(r.resets)),
        fact("Protocol", r.protocol ? text(r.protocol.binding) + " " + text(r.protocol.version) + " · " + text(r.protocol.url) : "—"),
        fact("Attacker model", text(r.attacker_model)),
        fact("Defender model", text(r.defender_model)),
        fact("Attacker tokens", usageText(r.attacker_usage)),
        fact("Defender tokens", usageText(r.defender_usage))), "match-setup") : null));

    if (!r) {
      parts.push(section("Transcript", emptyState(
        s.disposition === "played" ? "No result was stored for this match." : "This match was not played (" + humanize(text(s.disposition)) + ").")));
      return parts;
    }
    if (r.verdict) {
      parts.push(section("Deciding verdict", h("div", { class: "verdict-block", testid: "deciding-verdict" },
        verdictBadge(r.verdict), verdictDetail(r.verdict))));
    }
    const turns = Array.isArray(r.turns) ? r.turns : [];
    parts.push(section("Transcript",
      turns.length ? h("div", { class: "transcript", testid: "transcript" }, turns.map(turnView)) : emptyState("No turns were played."),
      h("span", { class: "muted", testid: "turn-count" }, turns.length === 1 ? "1 turn" : turns.length + " turns")));
    return parts;
  }

  function showMatch(id, gen) {
    document.title = "Match · A2A Arena";
    setCrumbs([["Campaigns", "#/"], ["match " + id, null]]);
    mount(loading());
    poll(gen, async () => {
      const record = await api("/v1/matches/" + encodeURIComponent(id));
      if (gen !== generation) return null;
      const campaignId = text(record.campaign_id, "");
      setCrumbs([["Campaigns", "#/"], [campaignId, campaignHash(campaignId)], ["match " + id, null]]);
      document.title = "Match " + id + " · A2A Arena";
      mount(matchView(record));
      return null;
    });
  }

  // ---------------------------------------------------------------- leaderboard

  // What GET /v1/leaderboard accepts (an OWASP id, an ISO date or date-time).
  const CATEGORY_PATTERN = /^[A-Z]{3}[0-9]{2}(:[0-9]{4})?$/;
  const SINCE_PATTERN = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
  const LEADERBOARD_POLL_MS = 30000; // settled campaigns arrive rarely; a new one means a new fit
  const HISTORY_ROWS = 12; // the latest points of the history shown
  const LEADERBOARD_SIDES = [
    ["attacker", "Attackers", "leaderboard-attackers"],
    ["defender", "Defenders", "leaderboard-defenders"],
  ];

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  function fmtRating(value) {
    return String(Math.round(num(value)));
  }

  // Colons stay readable in the hash (#/leaderboard?category=LLM01:2025).
  function queryValue(value) {
    return encodeURIComponent(String(value)).replace(/%3A/gi, ":");
  }

  /** True for a date, or date and time, the API takes: the pattern, and a day, hour and zone that exist. */
  function isSince(value) {
    if (!SINCE_PATTERN.test(value)) return false;
    const [, y, mo, d, hh, mi, ss] = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(value).map(Number);
    const day = new Date(0);
    day.setUTCFullYear(y, mo - 1, d); // not Date.UTC, which reads years 0-99 as 1900-1999
    if (y < 1 || day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return false;
    if ((hh || 0) > 23 || (mi || 0) > 59 || (ss || 0) > 59) return false;
    const zone = /[+-](\d{2}):?(\d{2})$/.exec(value.slice(10));
    return !zone || (Number(zone[1]) <= 23 && Number(zone[2]) <= 59);
  }

  function leaderboardQuery(filters) {
    const parts = [];
    if (filters.category) parts.push("category=" + queryValue(filters.category));
    if (filters.since) parts.push("since=" + queryValue(filters.since));
    return parts.length ? "?" + parts.join("&") : "";
  }

  /** The filters of the hash's query; a malformed one is dropped and named in ``ignored``. */
  function leaderboardFilters(query) {
    const params = new URLSearchParams(query || "");
    const filters = { category: null, since: null };
    const ignored = [];
    const category = (params.get("category") || "").trim();
    if (category) {
      if (CATEGORY_PATTERN.test(category)) filters.category = category;
      else ignored.push("category “" + clip(category, 40) + "” (an OWASP id such as LLM01:2025)");
    }
    // A "+" of a time zone arrives as a space when it was not encoded.
    const since = (params.get("since") || "").trim().replace(/ (\d{2}:?\d{2})$/, "+$1");
    if (since) {
      if (isSince(since)) filters.since = since;
      else ignored.push("since “" + clip(since, 40) + "” (a date such as 2025-11-30)");
    }
    return { filters, ignored };
  }

  /** The chess-scale 95% interval as a bar on the shared scale, and its bounds as text. */
  function ratingBar(player, scale, id) {
    const at = (value) => ((num(value) - scale.lowest) / scale.span) * 100;
    const low = num(player.low);
    const high = num(player.high);
    const range = h("span", { class: "rating-range" });
    range.style.left = at(low).toFixed(2) + "%";
    range.style.width = Math.max(((high - low) / scale.span) * 100, 0.5).toFixed(2) + "%";
    const mark = h("span", { class: "rating-mark" });
    mark.style.left = at(player.rating).toFixed(2) + "%";
    return h("span", { class: "rating-ci", title: "95% interval " + fmtRating(low) + " to " + fmtRating(high) },
      h("span", { class: "rating-track", "aria-hidden": "true", testid: "leaderboard-bar-" + id }, range, mark),
      h("span", { class: "rating-interval", testid: "leaderboard-interval-" + id }, fmtRating(low) + "–" + fmtRating(high)));
  }

  function ratingsTable(side, players, scale, testid) {
    if (!players.length) return emptyState("No " + side + "s.");
    const recordTitle = (p) => side === "defender"
      ? "held " + fmtInt(p.wins) + ", lost " + fmtInt(p.losses) + " of " + fmtInt(p.matches) + " matches"
      : "won " + fmtInt(p.wins) + ", lost " + fmtInt(p.losses) + " of " + fmtInt(p.matches) + " matches";
    return table(
      [["#", "num"], [side === "attacker" ? "Attacker" : "Defender"], ["Rating", "num"], ["95% interval", "col-interval"], ["W–L", "num"]],
      players.map((p, index) => {
        const id = side + "-" + index;
        return h("tr", { testid: "leaderboard-row-" + id },
          h("td", { class: "num muted" }, String(index + 1)),
          h("td", { class: "name player-name", title: text(p.name), testid: "leaderboard-player-" + id }, text(p.name)),
          h("td", { class: "num rating-value", testid: "leaderboard-rating-" + id }, fmtRating(p.rating)),
          h("td", { class: "col-interval" }, ratingBar(p, scale, id)),
          h("td", { class: "num", title: recordTitle(p), testid: "leaderboard-record-" + id },
            fmtInt(p.wins) + "–" + fmtInt(p.losses)));
      }),
      { testid, className: "leaderboard-table" });
  }

  /** A header cell for a player's name: clipped by CSS, the whole name in its title. */
  function playerHead(name, scope) {
    return h("th", { scope, class: "player-head", title: text(name) }, text(name));
  }

  /** Attacker rows x defender columns: the attacker's wins / matches of each pairing. */
  function pairingsMatrix(attackers, defenders, pairings) {
    if (!attackers.length || !defenders.length) return emptyState("No pairings.");
    const byPair = new Map(pairings.map((p) => [JSON.stringify([String(p.attacker), String(p.defender)]), p]));
    const rows = attackers.map((a, ai) => h("tr", null,
      playerHead(a.name, "row"),
      defenders.map((d, di) => {
        const testid = "leaderboard-pairing-" + ai + "-" + di;
        const p = byPair.get(JSON.stringify([String(a.name), String(d.name)]));
        const matches = p ? num(p.matches) : 0;
        if (!matches) {
          return h("td", { class: "pair pair-none", title: text(a.name) + " has not played " + text(d.name), testid }, "—");
        }
        const wins = num(p.attacker_wins);
        const tier = Math.min(4, Math.floor((wins / matches) * 5));
        return h("td", {
          class: "pair pair-" + tier, testid,
          title: text(a.name) + " won " + fmtInt(wins) + " of " + fmtInt(matches) + " against " + text(d.name)
            + " (" + fmtPct(wins / matches) + ")",
        }, fmtInt(wins) + "/" + fmtInt(matches));
      })));
    return h("div", { class: "table-wrap" },
      h("table", { class: "grid matrix", testid: "leaderboard-pairings" },
        h("thead", null, h("tr", null,
          h("th", { scope: "col", class: "corner" }, "Attacker \\ defender"),
          defenders.map((d) => playerHead(d.name, "col")))),
        h("tbody", null, rows)));
  }

  /** The latest campaigns, newest first, with each defender's rating after it and its change. */
  function historyTable(history, defenders) {
    if (!history.length) return emptyState("No history yet.");
    const points = history.map((point) => ({
      point,
      ratings: new Map(list(point.ratings).filter((r) => r.side === "defender").map((r) => [String(r.name), num(r.rating)])),
    }));
    const names = defenders.map((d) => String(d.name));
    const rows = [];
    for (let i = points.length - 1; i >= Math.max(0, points.length - HISTORY_ROWS); i -= 1) {
      const { point, ratings } = points[i];
      const previous = i > 0 ? points[i - 1].ratings : null;
      const row = rows.length;
      rows.push(h("tr", { testid: "leaderboard-history-row-" + row },
        h("td", { class: "name" },
          h("a", { href: campaignHash(text(point.campaign_id, "")), title: text(point.campaign_id) }, text(point.campaign_name, text(point.campaign_id)))),
        h("td", { class: "nowrap muted" }, fmtTime(point.finished_at)),
        h("td", { class: "num" }, fmtInt(point.matches)),
        names.map((name, di) => {
          const testid = "leaderboard-history-" + row + "-" + di;
          if (!ratings.has(name)) return h("td", { class: "num muted", testid }, "—");
          const now = Math.round(ratings.get(name));
          let delta = null;
          let title = name + ": " + now + " after this campaign";
          if (previous && previous.has(name)) {
            const change = now - Math.round(previous.get(name));
            title += " (" + (change > 0 ? "+" : "") + change + ")";
            if (change < 0) delta = h("span", { class: "delta down", testid: "delta" }, "▼" + -change);
            else if (change > 0) delta = h("span", { class: "delta up", testid: "delta" }, "▲" + change);
          } else if (previous) {
            delta = h("span", { class: "delta new", testid: "delta" }, "new");
          }
          return h("td", { class: "num", title, testid }, String(now), delta);
        })));
    }
    const shown = rows.length < points.length ? "latest " + rows.length + " of " + points.length + " campaigns" : null;
    return [
      h("div", { class: "table-wrap" },
        h("table", { class: "grid history", testid: "leaderboard-history" },
          h("thead", null, h("tr", null,
            h("th", { scope: "col" }, "Campaign"),
            h("th", { scope: "col" }, "Finished"),
            h("th", { scope: "col", class: "num", title: "matches fitted up to this campaign" }, "Matches"),
            defenders.map((d) => playerHead(d.name, "col")))),
          h("tbody", null, rows))),
      shown ? h("p", { class: "muted small table-note" }, "Showing the " + shown + ".") : null,
    ];
  }

  function leaderboardBody({ board, filtered }) {
    if (num(board.matches) === 0) {
      return h("section", { class: "panel" }, h("div", { class: "empty" },
        h("p", { testid: "leaderboard-empty" }, "No settled campaign has played matches yet."),
        h("p", { class: "muted" }, filtered
          ? "None with these filters: choose All categories or clear the date."
          : "A campaign enters the leaderboard once every one of its matches is accounted for.")));
    }
    const attackers = list(board.attackers);
    const defenders = list(board.defenders);
    const everyone = [...attackers, ...defenders];
    // One scale for both tables: attackers and defenders are rated against each other.
    const lowest = Math.min(...everyone.map((p) => num(p.low)));
    const highest = Math.max(...everyone.map((p) => num(p.high)));
    const scale = { lowest, span: Math.max(highest - lowest, 1) };
    const players = { attacker: attackers, defender: defenders };
    const count = (n, one, many) => fmtInt(n) + " " + (num(n) === 1 ? one : many);
    return [
      h("p", { class: "lb-note" },
        h("strong", { testid: "leaderboard-matches" }, count(board.matches, "played match", "played matches")),
        " of ",
        h("strong", { testid: "leaderboard-campaigns" }, count(board.campaigns, "settled campaign", "settled campaigns")),
        ". Bradley-Terry ratings on a chess-like scale centred on 1000: higher is stronger on both sides "
          + "(a defender rated higher holds better). The bar is the 95% interval from "
          + fmtInt(board.bootstrap_rounds) + " bootstrap rounds; the mark is the rating.",
        num(board.unrated_attackers) || num(board.unrated_defenders)
          ? h("span", { testid: "leaderboard-unrated" }, " Not rated: "
            + count(board.unrated_attackers, "attacker", "attackers") + " and "
            + count(board.unrated_defenders, "defender", "defenders")
            + " beyond the most played of each side, with their matches.")
          : null),
      h("div", { class: "lb-sides" }, LEADERBOARD_SIDES.map(([side, title, testid]) =>
        section(title, ratingsTable(side, players[side], scale, testid),
          h("span", { class: "muted" }, count(players[side].length, side, side + "s"))))),
      section("Head to head", pairingsMatrix(attackers, defenders, list(board.pairings)),
        h("span", { class: "muted" }, "attacker's wins / matches")),
      section("History", historyTable(list(board.history), defenders),
        h("span", { class: "muted" }, "each defender's rating after each campaign")),
    ];
  }

  /** The category <select>: All, then every category the API names (and the chosen one). */
  function categoryOptions(select, categories, chosen) {
    const names = [...new Set([...categories.map(String), ...(chosen ? [chosen] : [])])].sort();
    const signature = JSON.stringify(names);
    if (select.dataset.options === signature) return;
    select.dataset.options = signature;
    replaceChildren(select,
      h("option", { value: "" }, "All"),
      names.map((name) => h("option", { value: name }, name)));
    select.value = chosen || "";
  }

  function showLeaderboard(query, startGen) {
    document.title = "Leaderboard · A2A Arena";
    setCrumbs([["Campaigns", "#/"], ["Leaderboard", null]]);
    const parsed = leaderboardFilters(query);
    let filters = parsed.filters;
    let gen = startGen;
    if (parsed.ignored.length) showBanner("Filter ignored: " + parsed.ignored.join("; "), true);

    const select = h("select", { id: "leaderboard-category", class: "filter-input", testid: "leaderboard-category" });
    categoryOptions(select, [], filters.category);
    const since = h("input", {
      id: "leaderboard-since", class: "filter-input", type: "date", testid: "leaderboard-since",
      value: filters.since ? filters.since.slice(0, 10) : null,
    });
    const content = h("div", { class: "lb-content", testid: "leaderboard-content" }, loading());
    mount(h("div", { class: "leaderboard", testid: "leaderboard" },
      h("section", { class: "headline" },
        h("div", null, h("h1", null, "Leaderboard"),
          h("div", { class: "sub" }, "Every settled campaign's played matches, rated together.")),
        h("div", { class: "filters" },
          h("label", { for: "leaderboard-category" }, "OWASP category"), select,
          h("label", { for: "leaderboard-since", title: "the day starts at 00:00 UTC" }, "Finished since (UTC)"), since)),
      content));

    // A filter changes the hash in place (no new history entry per keystroke) and re-fetches.
    function applyFilters(next) {
      if (next.category === filters.category && next.since === filters.since) return;
      filters = next;
      window.history.replaceState(window.history.state, "", "#/leaderboard" + leaderboardQuery(filters));
      generation += 1;
      window.clearTimeout(timer);
      gen = generation;
      resetBanner();
      content.setAttribute("aria-busy", "true");
      load();
    }
    select.addEventListener("change", () => applyFilters({ ...filters, category: select.value || null }));
    since.addEventListener("change", () => {
      const value = since.value;
      if (value && !isSince(value)) return; // a date still being typed
      // A date-time from the hash stays while its day is the one shown.
      const kept = filters.since && value && filters.since.slice(0, 10) === value ? filters.since : value;
      applyFilters({ ...filters, since: kept || null });
    });

    function load() {
      const mine = gen;
      poll(mine, async () => {
        const board = await api("/v1/leaderboard" + leaderboardQuery(filters));
        if (mine !== generation) return null;
        categoryOptions(select, list(board.categories), filters.category);
        patch(content, { board, filtered: Boolean(filters.category || filters.since) }, leaderboardBody);
        content.removeAttribute("aria-busy");
        return LEADERBOARD_POLL_MS;
      });
    }
    load();
  }

  // ---------------------------------------------------------------- routing

  function route() {
    generation += 1;
    window.clearTimeout(timer);
    setLive(false);
    resetBanner();
    updateSignOut();
    const gen = generation;
    const path = window.location.hash.replace(/^#/, "") || "/";
    if (leaderboardLink) {
      if (/^\/leaderboard\/?(\?|$)/.test(path)) leaderboardLink.setAttribute("aria-current", "page");
      else leaderboardLink.removeAttribute("aria-current");
    }
    let match;
    try {
      if ((match = /^\/campaigns\/([^/]+)\/?$/.exec(path))) {
        showCampaign(decodeURIComponent(match[1]), gen);
      } else if ((match = /^\/matches\/([^/]+)\/?$/.exec(path))) {
        showMatch(decodeURIComponent(match[1]), gen);
      } else if ((match = /^\/leaderboard\/?(?:\?(.*))?$/.exec(path))) {
        showLeaderboard(match[1] || "", gen);
      } else if (path === "/" || path === "/campaigns" || path === "/campaigns/") {
        showCampaignList(gen);
      } else {
        notFound();
      }
    } catch (err) {
      if (err instanceof URIError) notFound();
      else throw err;
    }
    window.scrollTo(0, 0);
  }

  function notFound() {
    document.title = "Not found · A2A Arena";
    setCrumbs([["Campaigns", "#/"], ["not found", null]]);
    mount(emptyState("Nothing here.", "Go back to the campaign list."));
  }

  signOutButton.addEventListener("click", () => {
    clearToken();
    route();
  });
  window.addEventListener("hashchange", route);
  route();
})();
