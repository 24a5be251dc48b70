// The operations dashboard's charts: Chart.js (vendor/chartjs, served from 'self') drawn from the
// JSON the page carries in <script id="ops-dashboard-data" type="application/json"> (json_script),
// so nothing inline runs and the strict Content-Security-Policy holds.
(function () {
  "use strict";
  var source = document.getElementById("ops-dashboard-data");
  if (!source || typeof window.Chart === "undefined") {
    return;
  }
  var data = JSON.parse(source.textContent);
  var Chart = window.Chart;
  var COLORS = {
    sent: "#1f77b4",
    delivered: "#2ca02c",
    bounced_permanent: "#d62728",
    bounced_transient: "#ff9896",
    rejected: "#9467bd",
    failed: "#8c564b",
    suppressed: "#7f7f7f",
    review: "#ff7f0e",
    gmail: "#e6ab02",
    pause: "#b00020",
  };
  var LABELS = {
    delivered: "delivered",
    bounced_permanent: "hard bounce",
    bounced_transient: "soft bounce",
    rejected: "rejected",
    failed: "failed",
    suppressed: "suppressed",
  };
  // "2026-12-01T14" → "12-01 14h": short ticks for 168 hours.
  var labels = data.hours.map(function (hour) {
    return hour.slice(5, 10) + " " + hour.slice(11) + "h";
  });
  var common = {
    animation: false, // a year of data or a slow laptop: draw once, at once
    responsive: true,
    maintainAspectRatio: false,
    interaction: { mode: "index", intersect: false },
    plugins: { legend: { position: "bottom" } },
    scales: { x: { ticks: { maxTicksLimit: 14, autoSkip: true } } },
  };

  function options(extra) {
    return Object.assign({}, common, extra);
  }

  // A point is drawn where a value stands alone (its neighbours are gaps): a rate measured in one
  // hour only is a dot, not an invisible zero-length line.
  function pointRadii(values) {
    return values.map(function (value, i) {
      var alone = (i === 0 || values[i - 1] === null) && (i === values.length - 1 || values[i + 1] === null);
      return value !== null && alone ? 3 : 0;
    });
  }

  function line(label, values, color, more) {
    return Object.assign(
      { type: "line", label: label, data: values, borderColor: color, backgroundColor: color,
        pointRadius: pointRadii(values), pointHoverRadius: 4, borderWidth: 2, spanGaps: false },
      more || {}
    );
  }

  function constant(label, value, color) {
    return line(label, data.hours.map(function () { return value; }), color,
      { borderDash: [6, 4], borderWidth: 1, pointRadius: 0 });
  }

  // SES's lines as the tables print them: 5 %, 0.1 % (never 0.5000000000000001 %).
  function percentText(fraction) {
    return String(Math.round(fraction * 1000) / 10);
  }

  function draw(id, config) {
    var canvas = document.getElementById(id);
    if (canvas) {
      new Chart(canvas, config);
    }
  }

  var outcomes = Object.keys(data.sends.outcomes).map(function (name) {
    return { type: "bar", label: LABELS[name] || name, data: data.sends.outcomes[name],
      backgroundColor: COLORS[name], stack: "outcome" };
  });
  draw("chart-sends", {
    data: { labels: labels, datasets: [line("sent (accepted by SES)", data.sends.sent, COLORS.sent)]
      .concat(outcomes) },
    options: options({ scales: { x: { stacked: true, ticks: common.scales.x.ticks },
      y: { stacked: true, beginAtZero: true, title: { display: true, text: "emails" } } } }),
  });

  var review = data.lines.review, pause = data.lines.pause;
  draw("chart-bounce", {
    data: { labels: labels, datasets: [
      line("bounce rate %", data.rates.bounce, COLORS.bounced_permanent),
      constant("SES review " + percentText(review.bounce) + " %", review.bounce * 100, COLORS.review),
      constant("SES pause " + percentText(pause.bounce) + " %", pause.bounce * 100, COLORS.pause),
      line("delivery rate %", data.rates.delivery, COLORS.delivered, { yAxisID: "delivery" }),
    ] },
    options: options({ scales: { x: common.scales.x,
      y: { beginAtZero: true, suggestedMax: pause.bounce * 100 * 1.2,
        title: { display: true, text: "bounce %" } },
      delivery: { position: "right", min: 0, max: 100, grid: { drawOnChartArea: false },
        title: { display: true, text: "delivery %" } } } }),
  });
  draw("chart-complaint", {
    data: { labels: labels, datasets: [
      line("complaint rate %", data.rates.complaint, COLORS.review),
      constant("SES review " + percentText(review.complaint) + " %", review.complaint * 100,
        COLORS.review),
      constant("Gmail " + percentText(data.lines.gmail.complaint) + " %",
        data.lines.gmail.complaint * 100, COLORS.gmail),
      constant("SES pause " + percentText(pause.complaint) + " %", pause.complaint * 100,
        COLORS.pause),
    ] },
    options: options({ scales: { x: common.scales.x,
      y: { beginAtZero: true, suggestedMax: pause.complaint * 100 * 1.2,
        title: { display: true, text: "complaint %" } } } }),
  });
  draw("chart-dlq", {
    data: { labels: labels, datasets: [{ type: "bar", label: "dead letters", data: data.dlq,
      backgroundColor: COLORS.failed }] },
    options: options({ scales: { x: common.scales.x,
      y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "requests" } } } }),
  });
  draw("chart-throttles", {
    data: { labels: labels, datasets: [
      { type: "bar", label: "SES throttles", data: data.throttles.throttles,
        backgroundColor: COLORS.bounced_permanent },
      { type: "bar", label: "rate-limit waits", data: data.throttles.rate_waits,
        backgroundColor: COLORS.review },
    ] },
    options: options({ scales: { x: common.scales.x, y: { beginAtZero: true } } }),
  });
  if (data.quota && data.quota.max_24_hour_send !== undefined) {
    // Over the quota: the quota's share and what went past it, in red (not a solid blue ring).
    var quota = data.quota, over = quota.sent_last_24_hours - quota.max_24_hour_send;
    var parts = over > 0
      ? { labels: ["the 24-hour quota", "sent past the quota"],
          data: [quota.max_24_hour_send, over], colors: [COLORS.sent, COLORS.pause] }
      : { labels: ["sent in the last 24 h", "left of the 24-hour quota"],
          data: [quota.sent_last_24_hours, quota.remaining], colors: [COLORS.sent, "#dddddd"] };
    draw("chart-quota", {
      type: "doughnut",
      data: { labels: parts.labels, datasets: [{ data: parts.data, backgroundColor: parts.colors }] },
      options: { animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { legend: { position: "bottom" } } },
    });
  }
})();
