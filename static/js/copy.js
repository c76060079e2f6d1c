// Copy buttons: <button data-copy-text="…" data-copied="Copied" aria-describedby="status-id">.
// Falls back to selecting the text when the clipboard is not available (plain http, old browser).
(function () {
  "use strict";
  function select(button) {
    const code = button.parentElement.querySelector(".completion-code, code");
    if (!code) return;
    const range = document.createRange();
    range.selectNodeContents(code);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-copy-text]");
    if (!button) return;
    const status = document.getElementById(button.getAttribute("aria-describedby") || "");
    const done = function () {
      if (status) status.textContent = button.dataset.copied || "✓";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(button.dataset.copyText).then(done, function () {
        select(button);
      });
    } else {
      select(button);
      try {
        if (document.execCommand("copy")) done();
      } catch (error) {
        /* the text stays selected for Ctrl+C */
      }
    }
  });
})();
