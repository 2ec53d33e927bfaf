// Behaviour every page shares (loaded by base.html): copy buttons, "select all"
// checkboxes, and toasts — including the one that says an htmx request failed,
// since htmx 2 swaps nothing on an error status. Keyboard shortcuts live in
// keyboard.js, loaded with the cheatsheet on the pages that have them.
(() => {
  "use strict";

  const TOAST_MS = 4000;
  const ERROR_TOAST_MS = 6000;
  let toastTimer = null;

  function clearToastAfter(ms) {
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => {
      const toast = document.getElementById("toast");
      if (toast) toast.textContent = "";
    }, ms);
  }

  function showToast(text, ms) {
    const toast = document.getElementById("toast");
    if (!toast) return;
    toast.textContent = text;
    clearToastAfter(ms);
  }

  document.addEventListener("htmx:responseError", (event) => {
    showToast(`That did not work (HTTP ${event.detail.xhr.status}). Reload and try again.`, ERROR_TOAST_MS);
  });

  document.addEventListener("htmx:sendError", () => {
    showToast("The server could not be reached. Check the connection and try again.", ERROR_TOAST_MS);
  });

  // A toast the server swapped in out-of-band fades after a few seconds.
  document.addEventListener("htmx:oobAfterSwap", (event) => {
    if (event.detail.target && event.detail.target.id === "toast") clearToastAfter(TOAST_MS);
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy]");
    if (button) {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      navigator.clipboard.writeText(source.innerText.trim()).then(() => {
        const label = button.textContent;
        button.textContent = "Copied";
        setTimeout(() => (button.textContent = label), 1500);
      });
      return;
    }
    const all = event.target.closest("[data-check-all]");
    if (all) {
      document.querySelectorAll(`input[type=checkbox][name="${all.dataset.checkAll}"]`)
        .forEach((box) => (box.checked = all.checked));
    }
  });
})();
