/* Keyboard work on the annotation and review pages.
 *
 * Annotation: 0–9 choose a score, y/n answer a yes/no question, j/k or ↓/↑ move between questions,
 * Enter (or n where the current question is not yes/no) submits the item and opens the next one.
 * Second-level questions stay disabled until the first-level (gate) questions of their scope are
 * answered and passed; a failed gate leaves them disabled and shows that they are skipped and
 * score 0. Every change is
 * posted by htmx (autosave); the server validates and refuses what the rubric does not accept.
 *
 * Review: a = accept, r = reject (focuses the reasons first when none is chosen).
 */
(function () {
  "use strict";

  function typing(event) {
    var t = event.target;
    return t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text") || t.isContentEditable);
  }

  // ---- annotation page ----------------------------------------------------------------------
  function initAnnotate(root) {
    var current = -1;

    function forms() {
      return Array.prototype.slice.call(root.querySelectorAll("form.q"));
    }
    function enabled() {
      return forms().filter(function (f) { return !f.querySelector("fieldset").disabled; });
    }
    function answerOf(form) {
      var checked = form.querySelector("input[type=radio]:checked");
      if (checked) return checked.value;
      var text = form.querySelector("textarea");
      return text && text.value.trim() ? text.value : null;
    }
    function gateState(gate) {
      var value = answerOf(gate);
      if (value === null) return "open";
      return (gate.dataset.pass || "").split(",").indexOf(value) >= 0 ? "pass" : "fail";
    }
    function updateGates() {
      if (root.dataset.editable !== "1") return;  // a submitted item stays read-only
      var gates = forms().filter(function (f) { return f.dataset.gate === "1"; });
      forms().forEach(function (form) {
        if (form.dataset.gate === "1") return;
        var scope = gates.filter(function (g) {
          return g.dataset.level === "dialogue" || (form.dataset.level === "turn" && g.dataset.turn === form.dataset.turn);
        });
        var states = scope.map(gateState);
        var blocked = states.indexOf("open") >= 0 || states.indexOf("fail") >= 0;
        form.querySelector("fieldset").disabled = blocked;
        form.classList.toggle("q-waiting", states.indexOf("open") >= 0);
        var skipped = states.indexOf("fail") >= 0;
        form.classList.toggle("q-skipped", skipped);
        var note = form.querySelector(".q-skip-note");
        if (note) note.hidden = !skipped;  // says why it is grey: skipped, scores 0
      });
    }
    function focusQuestion(index) {
      var list = enabled();
      if (!list.length) return;
      current = Math.max(0, Math.min(index, list.length - 1));
      list.forEach(function (f) { f.classList.remove("q-current"); });
      var form = list[current];
      form.classList.add("q-current");
      var target = form.querySelector("input[type=radio]:checked") || form.querySelector("input[type=radio], textarea");
      if (target) target.focus({ preventScroll: true });
      form.scrollIntoView({ block: "nearest" });
    }
    function currentForm() {
      var list = enabled();
      var active = document.activeElement && document.activeElement.closest ? document.activeElement.closest("form.q") : null;
      if (active && list.indexOf(active) >= 0) { current = list.indexOf(active); return active; }
      return list[current] || null;
    }
    function choose(form, value) {
      var input = form.querySelector('input[type=radio][value="' + value + '"]');
      if (!input || input.disabled) return false;
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    }
    function nextUnanswered() {
      var list = enabled();
      for (var i = current + 1; i < list.length; i++) {
        if (answerOf(list[i]) === null) return focusQuestion(i);
      }
      focusQuestion(Math.min(current + 1, list.length - 1));
    }
    function submitItem() {
      var button = document.getElementById("submit-button");
      if (button) button.click();
    }

    root.addEventListener("change", function (event) {
      var form = event.target.closest("form.q");
      if (!form) return;
      form.dataset.answered = answerOf(form) === null ? "0" : "1";
      updateGates();
    });
    root.addEventListener("focusin", function (event) {
      var form = event.target.closest && event.target.closest("form.q");
      if (!form) return;
      forms().forEach(function (f) { f.classList.toggle("q-current", f === form); });
      current = enabled().indexOf(form);
    });
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
      var form = currentForm();
      var key = event.key;
      if (key === "j" || key === "ArrowDown") { focusQuestion(current + 1); event.preventDefault(); return; }
      if (key === "k" || key === "ArrowUp") { focusQuestion(current - 1); event.preventDefault(); return; }
      if (key === "Enter") { submitItem(); event.preventDefault(); return; }
      if (form && form.dataset.type === "yesno" && (key === "y" || key === "n")) {
        if (choose(form, key === "y" ? "1" : "0")) { updateGates(); nextUnanswered(); }
        event.preventDefault();
        return;
      }
      if (key === "n") { submitItem(); event.preventDefault(); return; }
      if (form && /^[0-9]$/.test(key)) {
        var value = form.dataset.type === "choice" ? String(Number(key) - 1) : key;
        if (choose(form, value)) { nextUnanswered(); }
        event.preventDefault();
      }
    });
    // Let htmx show a refused answer (422) in the question's status instead of dropping it.
    document.body.addEventListener("htmx:beforeSwap", function (event) {
      if (event.detail.xhr.status === 422) { event.detail.shouldSwap = true; event.detail.isError = false; }
    });
    updateGates();
    focusQuestion(0);
    var list = enabled();
    for (var i = 0; i < list.length; i++) { if (answerOf(list[i]) === null) { focusQuestion(i); break; } }
  }

  // ---- review page --------------------------------------------------------------------------
  function initReview(root) {
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
      var accept = root.querySelector("button[value=accept]");
      if (!accept) return;
      if (event.key === "a") {
        accept.click();
        event.preventDefault();
      } else if (event.key === "r") {
        var chosen = root.querySelectorAll("input[name=reasons]:checked").length;
        var comment = root.querySelector("textarea[name=comment]");
        if (chosen || (comment && comment.value.trim())) {
          root.querySelector("button[value=reject]").click();
        } else {
          var details = root.querySelector("#reject-reasons");
          details.classList.add("attention");
          root.querySelector("input[name=reasons]").focus();
        }
        event.preventDefault();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var annotate = document.querySelector("[data-page=annotate]");
    if (annotate) initAnnotate(annotate);
    var review = document.querySelector("[data-page=review]");
    if (review) initReview(review);
  });
})();
