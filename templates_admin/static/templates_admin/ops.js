// A job page's progress bar: poll the job's progress JSON until it finishes, then reload the page
// so the server renders the result. Bounded: at most an hour of polling.
(function () {
  "use strict";
  var root = document.getElementById("job-progress");
  if (!root || root.dataset.finished === "true") {
    return;
  }
  var bar = document.getElementById("job-progress-bar");
  var text = document.getElementById("job-progress-text");
  var state = document.getElementById("job-state");
  var polls = 0;

  function again(delay) {
    polls += 1;
    if (polls < 3600) {
      window.setTimeout(poll, delay);
    }
  }

  function poll() {
    window.fetch(root.dataset.progressUrl, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
      cache: "no-store",
    })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (data) {
        if (data.total !== null) {
          bar.max = Math.max(data.total, 1);
          bar.value = data.total ? data.done : 1;
        }
        text.textContent = data.text;
        state.textContent = data.state;
        state.className = "ops-state ops-" + data.state.toLowerCase();
        if (data.finished) {
          window.location.reload();
          return;
        }
        again(1000);
      })
      .catch(function () {
        again(3000);
      });
  }

  again(500);
})();
