// The page a sign-in answers with: it keeps the sign-in's console key in this origin's own
// storage (a page of another port of this host cannot read it), then opens the console, which
// sends the key with every request. The cookie alone operates nothing.
"use strict";
(() => {
  const meta = document.querySelector('meta[name="taskgate-console-key"]');
  if (meta && meta.content) localStorage.setItem("taskgate-console-key", meta.content);
  location.replace("/taskgate/console");
})();
