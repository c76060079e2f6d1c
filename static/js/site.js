/* Behaviour shared by every page, kept out of the HTML so the Content Security Policy can forbid
   inline scripts and eval (htmx runs with allowEval off; see config/settings.py).

   data-autosubmit            on a <select>: submit its form when it changes.
   data-copy="ID"             on a button: copy the value of input #ID; the status element
                              #copy-status says whether it worked (its data-copied /
                              data-copy-failed attributes hold the messages).
   data-remove-closest="SEL"  on a button: remove the closest ancestor matching SEL.
   data-swap-422              on an htmx target: swap a 422 response in (it carries the
                              form with its errors) instead of treating it as an error.
   data-index-from="ID"       on an htmx element: send the value of input #ID as `index`. */
(function () {
  "use strict";

  document.addEventListener("change", function (event) {
    var select = event.target.closest && event.target.closest("[data-autosubmit]");
    if (select && select.form) select.form.submit();
  });

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var copy = event.target.closest("[data-copy]");
    if (copy) {
      var input = document.getElementById(copy.dataset.copy);
      var status = document.getElementById("copy-status");
      input.select();
      navigator.clipboard.writeText(input.value).then(
        function () { if (status) status.textContent = status.dataset.copied || ""; },
        function () { if (status) status.textContent = status.dataset.copyFailed || ""; }
      );
      return;
    }
    var remover = event.target.closest("[data-remove-closest]");
    if (remover) {
      var target = remover.closest(remover.dataset.removeClosest);
      if (target) target.remove();
    }
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var status = event.detail.xhr.status;
    var source = event.detail.requestConfig && event.detail.requestConfig.elt;
    // A refused import (400) swaps its feedback in; the form, and its chosen file, stay.
    var refusedImport = status === 400 && source && source.closest("[data-import-form]");
    if ((status === 422 && target && target.closest("[data-swap-422]")) || refusedImport) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("htmx:configRequest", function (event) {
    var source = event.detail.elt;
    if (source && source.dataset && source.dataset.indexFrom) {
      var input = document.getElementById(source.dataset.indexFrom);
      if (input) event.detail.parameters.index = input.value;
    }
  });
})();
