// The approval's duplicate check: the server answers an approve of a
// near-duplicate of an approved item with a <dialog data-dup-confirm open> holding
// a real form (confirm_duplicate=1). Here it becomes a modal: the default button
// ([data-dup-default]) has focus, so Enter presses it: keep both (approve anyway),
// or merge when the most similar approved item has the same text (similarity 1.00).
// b keeps both, m merges into the most similar approved item; Esc (or Cancel)
// closes it and the item stays proposed. Self-contained: keyboard.js needs no change.
(() => {
  "use strict";
  const SELECTOR = "dialog[data-dup-confirm]";

  function show(root) {
    const scope = root && root.querySelectorAll ? root : document;
    const found = scope.matches && scope.matches(SELECTOR) ? [scope] : [];
    found.push(...scope.querySelectorAll(SELECTOR));
    found.forEach((dialog) => {
      if (dialog.dataset.shown) return;
      dialog.dataset.shown = "1";
      dialog.removeAttribute("open"); // rendered open for pages without JavaScript
      dialog.showModal();
      const ok = dialog.querySelector("[data-dup-default]") || dialog.querySelector("[data-dup-confirm-ok]");
      if (ok) ok.focus();
    });
  }

  // Closed without confirming: drop the dialog and give the row (or item) its focus back.
  function closed(dialog) {
    const row = dialog.closest("[data-row]");
    dialog.remove();
    if (row && row.isConnected) {
      document.querySelectorAll("[data-rows] [data-row].focused").forEach((r) => r.classList.remove("focused"));
      row.classList.add("focused");
      row.setAttribute("tabindex", "-1");
      row.focus({ preventScroll: true });
    }
  }

  document.addEventListener("DOMContentLoaded", () => show(document));
  document.addEventListener("htmx:load", (event) => show(event.target));
  // "close" does not bubble: listen in the capture phase.
  document.addEventListener(
    "close",
    (event) => {
      const dialog = event.target;
      // (a close event queued before the dialog was shown again finds it open: not a cancel)
      if (dialog.matches && dialog.matches(SELECTOR) && !dialog.open && !dialog.dataset.confirming) closed(dialog);
    },
    true,
  );
  document.addEventListener("submit", (event) => {
    const dialog = event.target.closest && event.target.closest(SELECTOR);
    if (dialog) dialog.dataset.confirming = "1";
  }, true);
  document.addEventListener("click", (event) => {
    const cancel = event.target.closest && event.target.closest("[data-dup-cancel]");
    if (cancel) cancel.closest("dialog").close();
  });
  // While it is open, the queue's single-key shortcuts must not act on the rows behind it.
  document.addEventListener(
    "keydown",
    (event) => {
      const open = document.querySelector(SELECTOR + "[open]");
      if (!open) return;
      // b keeps both (approve anyway), m merges into the most similar approved item.
      const button = { b: "[data-dup-confirm-ok]", m: "[data-dup-merge]" }[event.key];
      if (button && open.querySelector(button) && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        event.stopPropagation();
        open.querySelector(button).click();
        return;
      }
      if (!["Enter", "Escape", "Tab", " "].includes(event.key)) event.stopPropagation();
    },
    true,
  );
})();
