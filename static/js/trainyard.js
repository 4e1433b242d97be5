// Small progressive enhancements; every page works without them.
(function () {
  "use strict";
  // Remember the browser's time zone so the server shows times in it.
  try {
    var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (tz && document.cookie.indexOf("tz=" + tz) === -1) {
      document.cookie = "tz=" + tz + "; path=/; max-age=31536000; SameSite=Lax";
    }
  } catch (e) { /* old browser: times stay in the server's zone */ }

  // Selects marked data-autosubmit submit their form on change.
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el.matches && el.matches("select[data-autosubmit]") && el.form) {
      el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
    }
  });
})();
