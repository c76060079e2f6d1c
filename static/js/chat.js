/* The chat page: Enter to send (never during an IME composition), the streamed reply.
 *
 * The send's response is the reply itself, as server-sent events read with fetch(): first
 * `sent` (the utterance's turn, the pending reply, the status bar), then `chunk` events (text, JSON
 * strings), appended with textContent so model output can never become markup; `saved` carries
 * the server-rendered (escaped) turn and status bar; `failed` the error with a retry button.
 * A dropped connection reconnects (the server may be another web process) sending the id of
 * the last event received as `Last-Event-ID`: the stream continues right after it, so no
 * character is lost or doubled. `reset` (a generator died and another took over) clears the text.
 */
(function () {
  "use strict";

  // The retry and grounding views answer 422 with the reason (retargeted to the error line).
  if (window.htmx) {
    window.htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      { code: "422", swap: true, error: false },
      { code: "[45]..", swap: false, error: true },
    ];
  }

  const MAX_RECONNECTS = 5;

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  function replaceWith(target, html) {
    const node = fragment(html);
    target.replaceWith(node);
    if (window.htmx) window.htmx.process(node);
    return node;
  }

  function scrollToEnd() {
    const turns = document.getElementById("turns");
    if (turns) turns.lastElementChild?.scrollIntoView({ block: "end", behavior: "smooth" });
  }

  function syncComposer() {
    const status = document.getElementById("chat-status");
    const button = document.getElementById("send-button");
    const box = document.getElementById("utterance");
    if (!status || !button) return;
    const canSend = status.dataset.canSend === "true";
    const awaiting = status.dataset.awaiting === "true";
    button.disabled = !canSend;
    if (box) box.disabled = !canSend && !awaiting;
  }

  function parseEvent(raw) {
    let name = "message";
    let id = null;
    const data = [];
    for (const line of raw.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("id:")) id = line.slice(3).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    return { name: name, id: id, data: data.length ? JSON.parse(data.join("\n")) : null };
  }

  // Reads a response's server-sent events, calling onEvent(event) for each.
  async function readEvents(response, onEvent) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        onEvent(parseEvent(buffer.slice(0, end)));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  // Applies one event of a reply to its pending turn; true once the reply is finished.
  function applyReplyEvent(pending, event) {
    const textEl = pending.querySelector(".reply-text");
    if (event.id) pending.dataset.lastEventId = event.id;
    if (event.name === "reset") {
      textEl.textContent = "";
    } else if (event.name === "chunk") {
      textEl.textContent += event.data;
      scrollToEnd();
    } else if (event.name === "saved") {
      replaceWith(pending, event.data.turn_html);
      const status = document.getElementById("chat-status");
      if (status) replaceWith(status, event.data.status_html);
      return true;
    } else if (event.name === "failed") {
      replaceWith(pending, event.data.html);
      return true;
    }
    return false;
  }

  function replyFinished() {
    syncComposer();
    scrollToEnd();
    document.getElementById("utterance")?.focus();
  }

  // Follows a reply on the stream view: a pending reply on page load or after a retry, or a
  // send whose connection broke (from the last event received, with Last-Event-ID).
  async function streamReply(pending, attempt) {
    let finished = false;
    try {
      const headers = { Accept: "text/event-stream" };
      const lastId = pending.dataset.lastEventId;
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch(pending.dataset.streamUrl, {
        headers: headers,
        credentials: "same-origin",
      });
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      // Without an id the first chunk replays everything streamed so far.
      if (!lastId) pending.querySelector(".reply-text").textContent = "";
      await readEvents(response, function (event) {
        if (!finished && applyReplyEvent(pending, event)) finished = true;
      });
    } catch (error) {
      // Network trouble: reconnect below; the generation itself carries on on the server.
    }
    if (finished) {
      replyFinished();
      return;
    }
    if (attempt < MAX_RECONNECTS) {
      window.setTimeout(function () { streamReply(pending, attempt + 1); }, 500 * (attempt + 1));
    } else {
      pending.querySelector(".typing").textContent = pending.dataset.lostText;
    }
  }

  // The composer's error line: the server's refusal (HTML), or `text` of our own.
  function showComposerError(html, text) {
    const current = document.getElementById("composer-error");
    if (!current) return;
    if (html) {
      replaceWith(current, html);
    } else {
      const line = document.createElement("p");
      line.textContent = text;
      current.replaceChildren(line);
    }
  }

  // The `sent` event: the utterance's turn and the pending reply join the list, the status
  // bar changes. The pending reply is followed by the send's own response, not a new stream.
  function showSent(data) {
    const turns = document.getElementById("turns");
    document.getElementById("no-turns")?.remove();
    turns.appendChild(fragment(data.turn_html));
    const pending = fragment(data.pending_html);
    pending.dataset.started = "1";
    turns.appendChild(pending);
    const status = document.getElementById("chat-status");
    if (status) replaceWith(status, data.status_html);
    document.getElementById("composer-error")?.replaceChildren();
    scrollToEnd();
    return pending;
  }

  // Sends the utterance; the response is the reply's event stream (see `dialogue_send`).
  async function send(form) {
    document.getElementById("send-button").disabled = true;
    let response;
    try {
      response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { Accept: "text/event-stream" },
        credentials: "same-origin",
      });
    } catch (error) {
      showComposerError(null, form.dataset.lostText);
      syncComposer();
      return;
    }
    if (response.redirected) {
      window.location.assign(response.url); // signed out meanwhile: the login page
      return;
    }
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || !response.body || !type.startsWith("text/event-stream")) {
      // 422: why the utterance was refused (the composer's error line); the text stays.
      if (response.status === 422) showComposerError(await response.text(), null);
      else showComposerError(null, form.dataset.lostText);
      syncComposer();
      return;
    }
    form.reset();
    let pending = null;
    let finished = false;
    try {
      await readEvents(response, function (event) {
        if (event.name === "sent") pending = showSent(event.data);
        else if (pending && !finished && applyReplyEvent(pending, event)) finished = true;
      });
    } catch (error) {
      // The connection broke: continue on the stream view below.
    }
    if (finished) replyFinished();
    else if (pending) streamReply(pending, 1);
    else window.location.reload(); // saved, but its turn never arrived: the page shows it
  }

  function startPendingStreams(root) {
    const scope = root && root.querySelectorAll ? root : document;
    const found = scope.matches && scope.matches("[data-stream-url]") ? [scope] : [];
    found.push(...scope.querySelectorAll("[data-stream-url]"));
    for (const pending of found) {
      if (pending.dataset.started) continue;
      pending.dataset.started = "1";
      streamReply(pending, 0);
    }
  }

  function wireComposer() {
    const form = document.getElementById("composer");
    const box = document.getElementById("utterance");
    if (!form || !box || form.dataset.wired) return;
    form.dataset.wired = "1";
    box.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || event.shiftKey) return;
      // While an input method is composing (pinyin, kana), Enter picks a candidate.
      if (event.isComposing || event.keyCode === 229) return;
      event.preventDefault();
      const button = document.getElementById("send-button");
      if (button && !button.disabled && box.value.trim()) form.requestSubmit(button);
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      send(form);
    });
  }

  function wireCompletionRedirect() {
    const target = document.querySelector("[data-redirect-url]");
    if (!target || target.dataset.wired) return;
    target.dataset.wired = "1";
    const seconds = Number(target.dataset.redirectSeconds || "5");
    window.setTimeout(function () {
      window.location.assign(target.dataset.redirectUrl);
    }, seconds * 1000);
  }

  // On a phone the instructions and grounding fold away above the chat (tap to open).
  function foldSidePanelOnPhones() {
    const panel = document.getElementById("side-panel");
    if (panel && window.matchMedia("(max-width: 600px)").matches) panel.removeAttribute("open");
  }

  // A page restored from the back/forward cache is the page as it was left: after 「完成」 it
  // would show an open chat with 「发送」 enabled. Load it again from the server (the page is
  // also sent with `Cache-Control: no-store`, so Back never shows a stored copy).
  function reloadWhenRestored(event) {
    if (event.persisted && document.getElementById("chat-status")) window.location.reload();
  }

  // The side-by-side page (side_by_side.js) reads its two streams with the same helpers.
  window.chatStreams = {
    fragment: fragment,
    replaceWith: replaceWith,
    readEvents: readEvents,
    showComposerError: showComposerError,
  };

  function init() {
    foldSidePanelOnPhones();
    wireComposer();
    wireCompletionRedirect();
    startPendingStreams(document);
    syncComposer();
    scrollToEnd();
    document.addEventListener("htmx:afterSettle", syncComposer);
    window.addEventListener("pageshow", reloadWhenRestored);
    if (window.htmx) {
      window.htmx.onLoad(function (element) {
        startPendingStreams(element);
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
