// The Switchboard console's only script (served from the binary, under a
// Content-Security-Policy that allows nothing else). It keeps the
// Servers table live from /console/events; every value is set with
// textContent, never as HTML, so a server's text stays text.
"use strict";
(function () {
  var table = document.getElementById("servers");
  var live = document.getElementById("live");
  if (!table || !window.EventSource) {
    return;
  }
  var fields = ["statusText", "reason", "protocol", "tools", "transport", "breaker", "sandbox"];
  function rowOf(alias) {
    var rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.server === alias) {
        return rows[i];
      }
    }
    var row = table.tBodies[0].insertRow(-1);
    row.dataset.server = alias;
    row.insertCell(-1).textContent = alias;
    fields.forEach(function (f) {
      row.insertCell(-1).dataset.field = f;
    });
    return row;
  }
  function apply(servers) {
    servers.forEach(function (s) {
      var row = rowOf(s.alias);
      fields.forEach(function (f) {
        var cell = row.querySelector("td[data-field='" + f + "']");
        if (cell) {
          cell.textContent = String(s[f]);
        }
      });
      var status = row.querySelector("td[data-field='statusText']");
      if (status) {
        status.className = "status status-" + s.status.replace(/[^a-z_]/g, "");
      }
      row.dataset.status = s.status;
    });
  }
  var source = new EventSource("/console/events");
  source.addEventListener("servers", function (e) {
    live.dataset.state = "live";
    live.textContent = "Live: updates as servers change.";
    apply(JSON.parse(e.data));
  });
  source.onerror = function () {
    live.dataset.state = "lost";
    live.textContent = "Live updates lost; retrying.";
  };
})();
