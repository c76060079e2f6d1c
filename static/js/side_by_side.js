/* The side-by-side page: one composer, two blind systems (A left, B right) answering at once.
 *
 * The send's response streams both replies (events `a:chunk`, `b:chunk`, `a:saved`, …, then
 * `controls`: the status bar and the vote panel). Chunks are appended with textContent, so model
 * output never becomes markup. A side whose connection breaks continues on its own stream view
 * with its last event id (`Last-Event-ID`), like the single chat page; once both sides are done
 * the controls are fetched again. On a phone (≤ 640 px) the two panes are tabs; a tab whose
 * pane is hidden shows that its reply is streaming. Uses chat.js's helpers (window.chatStreams).
 */
(function () {
  "use strict";

  const MAX_RECONNECTS = 5;
  const SIDES = ["a", "b"];

  function streams() {
    return window.chatStreams;
  }

  function markStreaming(side, on) {
    const tab = document.getElementById("tab-" + side);
    if (tab) tab.classList.toggle("streaming", on);
  }

  function scrollPane(side) {
    const turns = document.getElementById("turns-" + side);
    turns?.lastElementChild?.scrollIntoView({ block: "end", behavior: "smooth" });
  }

  function syncComposer() {
    const status = document.getElementById("sbs-status");
    const button = document.getElementById("sbs-send");
    const box = document.getElementById("utterance");
    if (!status || !button) return;
    const canSend = status.dataset.canSend === "true";
    button.disabled = !canSend;
    if (box) box.disabled = !canSend && status.dataset.awaiting !== "true";
  }

  function replaceControls(html) {
    const current = document.getElementById("sbs-controls");
    if (current) streams().replaceWith(current, html);
    syncComposer();
  }

  async function refreshControls() {
    const root = document.getElementById("sbs");
    const response = await fetch(root.dataset.controlsUrl, { credentials: "same-origin" });
    if (response.ok) replaceControls(await response.text());
  }

  // Applies one event of a side's reply to its pending turn; true once that reply is finished.
  function applySideEvent(pending, name, event) {
    const textEl = pending.querySelector(".reply-text");
    if (event.id) pending.dataset.lastEventId = event.id;
    if (name === "reset") {
      textEl.textContent = "";
    } else if (name === "chunk") {
      textEl.textContent += event.data;
      markStreaming(pending.dataset.side, true);
      scrollPane(pending.dataset.side);
    } else if (name === "saved") {
      streams().replaceWith(pending, event.data.turn_html);
      return true;
    } else if (name === "failed") {
      streams().replaceWith(pending, event.data.html);
      return true;
    }
    return false;
  }

  function pendingOf(side) {
    return document.getElementById("reply-pending-" + side);
  }

  function allSettled() {
    return SIDES.every(function (side) { return !pendingOf(side); });
  }

  function sideFinished(side) {
    markStreaming(side, false);
    if (allSettled()) refreshControls();
  }

  // Follows one side on its stream view (page load, retry, or a broken send).
  async function streamSide(pending, attempt) {
    const side = pending.dataset.side;
    let finished = false;
    markStreaming(side, true);
    try {
      const headers = { Accept: "text/event-stream" };
      const lastId = pending.dataset.lastEventId;
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch(pending.dataset.sbsStreamUrl, { headers: headers, credentials: "same-origin" });
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      if (!lastId) pending.querySelector(".reply-text").textContent = "";
      await streams().readEvents(response, function (event) {
        const [eventSide, name] = event.name.split(":");
        if (eventSide === side && !finished && applySideEvent(pending, name, event)) finished = true;
      });
    } catch (error) {
      // Network trouble: reconnect below; the generation carries on on the server.
    }
    if (finished) {
      sideFinished(side);
    } else if (attempt < MAX_RECONNECTS) {
      window.setTimeout(function () { streamSide(pending, attempt + 1); }, 500 * (attempt + 1));
    } else {
      pending.querySelector(".typing").textContent = pending.dataset.lostText;
      markStreaming(side, false);
    }
  }

  function showSent(data) {
    const pending = {};
    for (const side of SIDES) {
      const turns = document.getElementById("turns-" + side);
      turns.appendChild(streams().fragment(data["turn_" + side]));
      const node = streams().fragment(data["pending_" + side]);
      node.dataset.started = "1";
      turns.appendChild(node);
      pending[side] = node;
      markStreaming(side, true);
      scrollPane(side);
    }
    document.getElementById("composer-error")?.replaceChildren();
    return pending;
  }

  async function send(form) {
    document.getElementById("sbs-send").disabled = true;
    let response;
    try {
      response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { Accept: "text/event-stream" },
        credentials: "same-origin",
      });
    } catch (error) {
      streams().showComposerError(null, form.dataset.lostText);
      syncComposer();
      return;
    }
    if (response.redirected) {
      window.location.assign(response.url);
      return;
    }
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || !response.body || !type.startsWith("text/event-stream")) {
      if (response.status === 422) streams().showComposerError(await response.text(), null);
      else streams().showComposerError(null, form.dataset.lostText);
      syncComposer();
      return;
    }
    form.reset();
    let pending = null;
    const finished = { a: false, b: false };
    let controls = false;
    try {
      await streams().readEvents(response, function (event) {
        if (event.name === "sent") {
          pending = showSent(event.data);
          const status = document.getElementById("sbs-status");
          if (status) status.dataset.canSend = "false";
          return;
        }
        if (event.name === "controls") {
          controls = true;
          replaceControls(event.data.html);
          return;
        }
        const [side, name] = event.name.split(":");
        if (!pending || !pending[side] || finished[side]) return;
        if (applySideEvent(pending[side], name, event)) {
          finished[side] = true;
          markStreaming(side, false);
        }
      });
    } catch (error) {
      // The connection broke: each unfinished side continues on its stream view below.
    }
    if (!pending) {
      window.location.reload();
      return;
    }
    for (const side of SIDES) {
      if (!finished[side]) streamSide(pending[side], 1);
    }
    if (finished.a && finished.b && !controls) refreshControls();
    document.getElementById("utterance")?.focus();
  }

  function startPending() {
    for (const side of SIDES) {
      const pending = pendingOf(side);
      if (pending && !pending.dataset.started) {
        pending.dataset.started = "1";
        streamSide(pending, 0);
      }
    }
  }

  function wireTabs() {
    for (const tab of document.querySelectorAll(".sbs-tab")) {
      tab.addEventListener("click", function () {
        for (const other of document.querySelectorAll(".sbs-tab")) {
          const selected = other === tab;
          other.setAttribute("aria-selected", selected ? "true" : "false");
          document.getElementById("pane-" + other.dataset.side).classList.toggle("active", selected);
        }
      });
    }
  }

  function wireComposer() {
    const form = document.getElementById("sbs-composer");
    const box = document.getElementById("utterance");
    if (!form || !box) return;
    box.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || event.shiftKey) return;
      if (event.isComposing || event.keyCode === 229) return;
      event.preventDefault();
      const button = document.getElementById("sbs-send");
      if (button && !button.disabled && box.value.trim()) form.requestSubmit(button);
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      send(form);
    });
  }

  function init() {
    if (!document.getElementById("sbs")) return;
    wireTabs();
    wireComposer();
    startPending();
    syncComposer();
    document.addEventListener("htmx:afterSettle", syncComposer);
    if (window.htmx) {
      window.htmx.onLoad(function (element) {
        if (element.matches && element.matches("[data-sbs-stream-url]") && !element.dataset.started) {
          element.dataset.started = "1";
          streamSide(element, 0);
        }
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
