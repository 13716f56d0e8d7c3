// memhub's web page: the timeline of a scope's facts, each a bar over its validity interval.
// One memory from another year must not squeeze the others into one dot, so the time axis
// is linear except where a gap dwarfs all the rest: such a gap is drawn as a short hatched
// break naming how long it is, and the time on either side keeps the track's width.

import { el } from "./api.js";

const BREAK_WIDTH = 6; // percent of the track one shortened gap takes
const MAX_BREAKS = 3;
// A gap is shortened when it is longer than this many times all the smaller gaps together
// (drawn to scale, they would get less than a fifth of the track) and at least a minute.
const DWARFS = 4;
const SHORTEST_BREAK = 60e3;

// The gaps between consecutive distinct times to shorten: the longest first, while each is
// longer than DWARFS times the sum of the gaps shorter than it (and SHORTEST_BREAK).
function brokenGaps(points) {
  const gaps = points.slice(1).map((t, i) => ({ index: i, size: t - points[i] }));
  const longestFirst = [...gaps].sort((a, b) => b.size - a.size);
  let rest = gaps.reduce((sum, gap) => sum + gap.size, 0);
  const broken = new Set();
  for (const gap of longestFirst.slice(0, MAX_BREAKS)) {
    rest -= gap.size;
    if (gap.size <= DWARFS * rest || gap.size < SHORTEST_BREAK) break;
    broken.add(gap.index);
  }
  return broken;
}

// The axis over ``times`` (milliseconds): ``at(t)`` is t's position in percent of the track,
// ``breaks`` the shortened gaps ({left, width, from, to}).
export function timeAxis(times) {
  const points = [...new Set(times)].sort((a, b) => a - b);
  const broken = brokenGaps(points);
  // Runs of points not separated by a shortened gap; each keeps a linear scale of its own.
  const runs = [[points[0]]];
  points.slice(1).forEach((t, i) => (broken.has(i) ? runs.push([t]) : runs.at(-1).push(t)));
  const spans = runs.map((run) => run.at(-1) - run[0]);
  const total = spans.reduce((sum, span) => sum + span, 0);
  // A run spanning no time (one memory alone) still gets a little room for its bar.
  const weights = spans.map((span) => (total ? Math.max(span, total * 0.03) : 1));
  const free = 100 - BREAK_WIDTH * (runs.length - 1);
  const weightSum = weights.reduce((sum, w) => sum + w, 0);
  let left = 0;
  const segments = runs.map((run, i) => {
    const width = (free * weights[i]) / weightSum;
    const segment = { start: run[0], end: run.at(-1), left, width };
    left += width + BREAK_WIDTH;
    return segment;
  });
  const at = (t) => {
    const segment = segments.findLast((s) => s.start <= t) || segments[0];
    const span = segment.end - segment.start;
    const within = span ? (Math.min(t, segment.end) - segment.start) / span : 0;
    return segment.left + within * segment.width;
  };
  const breaks = segments.slice(1).map((s, i) => ({
    left: s.left - BREAK_WIDTH, width: BREAK_WIDTH, from: segments[i].end, to: s.start,
  }));
  return { at, breaks };
}

const UNITS = [
  ["year", 365.25 * 86400e3], ["month", 30.44 * 86400e3], ["day", 86400e3],
  ["hour", 3600e3], ["minute", 60e3],
];

// "11 months", "3 days": a gap's length in its largest whole unit.
export function duration(ms) {
  for (const [unit, size] of UNITS) {
    const n = Math.floor(ms / size);
    if (n >= 1) return `${n} ${unit}${n === 1 ? "" : "s"}`;
  }
  return "under a minute";
}

function gapMarks(breaks) {
  return breaks.map((gap) => {
    const mark = el("div", { class: "gap", title: `${duration(gap.to - gap.from)} skipped` });
    // CSSOM, not a style attribute: the page's CSP allows no inline styles.
    mark.style.left = `${gap.left}%`;
    mark.style.width = `${gap.width}%`;
    return mark;
  });
}

function factRow(fact, axis, byId) {
  const row = el("li", { class: fact.valid_to ? "fact closed" : "fact open" });
  const track = el("div", { class: "track" });
  const bar = el("div", { class: "bar" });
  const left = axis.at(fact.from);
  bar.style.left = `${left}%`;
  bar.style.width = `${Math.max(axis.at(fact.to) - left, 1)}%`;
  track.append(bar, ...gapMarks(axis.breaks));
  const from = new Date(fact.from).toLocaleString();
  let span = `${from} – now`;
  if (fact.valid_to) {
    const next = byId.get(fact.superseded_by);
    const successor = next ? ` → “${next.memory}”` : "";
    span = `${from} – ${new Date(fact.to).toLocaleString()}${successor}`;
  }
  row.append(el("p", { class: "label" }, fact.memory), track, el("p", { class: "muted when" }, span));
  return row;
}

// The rows of the timeline of ``memories`` (current and superseded), oldest first, and a
// sentence saying what the axis spans and which gaps it shortens.
export function timelineRows(memories, now) {
  const facts = memories
    .map((m) => ({
      ...m, from: Date.parse(m.valid_from), to: m.valid_to ? Date.parse(m.valid_to) : now,
    }))
    .sort((a, b) => a.from - b.from);
  if (!facts.length) return { rows: [], caption: "No memories to show." };
  const axis = timeAxis([...facts.flatMap((f) => [f.from, f.to]), now]);
  const byId = new Map(facts.map((f) => [f.id, f]));
  const start = new Date(facts[0].from).toLocaleDateString();
  const skipped = axis.breaks.map((gap) => duration(gap.to - gap.from));
  const caption = skipped.length
    ? `From ${start} to now; hatched: ${skipped.join(", ")} without changes, drawn short.`
    : `From ${start} to now, to scale.`;
  return { rows: facts.map((fact) => factRow(fact, axis, byId)), caption };
}
