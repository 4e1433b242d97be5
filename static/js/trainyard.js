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

  // Selects marked data-autosubmit submit their form on change. The language
  // select, on a page with a form that carries its values through the switch
  // (New job), submits that form instead, so nothing typed is lost.
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (!(el.matches && el.matches("select[data-autosubmit]") && el.form)) {
      return;
    }
    var carry = el.name === "language" && document.querySelector("button[data-language-carry]");
    if (carry && carry.form && carry.form.elements._language) {
      carry.form.elements._language.value = el.value;
      carry.click();
      return;
    }
    el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
  });
})();
