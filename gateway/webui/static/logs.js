// The log view: the newest lines at the chosen level.
import * as API from "./api.js";

const $ = (id) => document.getElementById(id);

export async function showLogs() {
  const data = await API.logs($("log-level").value);
  const ol = $("log-lines");
  ol.replaceChildren();
  for (const l of data.lines) {
    const li = document.createElement("li");
    li.className = "log " + l.level.toLowerCase();
    li.textContent = l.text;
    ol.append(li);
  }
  if (!data.lines.length) {
    const li = document.createElement("li");
    li.className = "muted";
    li.textContent = "No lines at this level.";
    ol.append(li);
  }
  ol.scrollTop = ol.scrollHeight;
}

$("log-level").addEventListener("change", showLogs);
$("log-refresh").addEventListener("click", showLogs);
