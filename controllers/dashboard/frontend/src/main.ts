// The dashboard's browser code: htmx with its SSE extension for the live swaps the server sends,
// set up for a strict Content-Security-Policy, plus two behaviours of our own: ages that keep
// counting (`data-since`) and a log pane that follows its new lines (`data-follow`). The server
// renders every other thing; this code writes only textContent and scroll positions.
import htmx from "htmx.org";
import "htmx-ext-sse";

// Under `default-src 'self'` nothing may eval, run an inline script or add an inline style:
// htmx would do each of these by default.
htmx.config.allowEval = false;
htmx.config.allowScriptTags = false;
htmx.config.includeIndicatorStyles = false;
// Settling copies `style` attributes, which a strict CSP blocks.
htmx.config.attributesToSettle = ["class", "width", "height"];
// A page's state is live; a snapshot in local storage would come back stale: history reloads.
htmx.config.historyCacheSize = 0;
htmx.config.refreshOnHistoryMiss = true;

const SINCE = "[data-since]";
const FOLLOW = "[data-follow]";
const REFRESH_MS = 5000;
// How near the bottom (in pixels) a log pane still counts as followed.
const NEAR_BOTTOM = 4;

const UNITS: ReadonlyArray<readonly [string, number]> = [
  ["d", 86400],
  ["h", 3600],
  ["m", 60],
];

/** An age as the tables show it, in its largest whole unit: "12s", "5m", "3h", "2d". */
function age(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  for (const [unit, size] of UNITS) {
    if (whole >= size) {
      return `${Math.floor(whole / size)}${unit}`;
    }
  }
  return `${whole}s`;
}

/** The elements matching `selector` in `root`, `root` itself included. */
function within(root: Node, selector: string): HTMLElement[] {
  if (!(root instanceof HTMLElement)) {
    return [];
  }
  const found = Array.from(root.querySelectorAll<HTMLElement>(selector));
  return root.matches(selector) ? [root, ...found] : found;
}

/** Shows each `data-since` element's age; one whose time does not parse keeps its text. */
function showAges(root: Node): void {
  const now = Date.now();
  for (const element of within(root, SINCE)) {
    const since = Date.parse(element.dataset["since"] ?? "");
    if (!Number.isNaN(since)) {
      element.textContent = age((now - since) / 1000);
    }
  }
}

const followed = new WeakSet<HTMLElement>();

/** Keeps `pane` scrolled to its end as lines arrive, until the user scrolls up; scrolling back
 * to the end follows again. */
function follow(pane: HTMLElement): void {
  if (followed.has(pane)) {
    return;
  }
  followed.add(pane);
  let atEnd = true;
  const toEnd = (): void => {
    pane.scrollTop = pane.scrollHeight;
  };
  pane.addEventListener("scroll", () => {
    atEnd = pane.scrollHeight - pane.scrollTop - pane.clientHeight <= NEAR_BOTTOM;
  });
  new MutationObserver(() => {
    if (atEnd) {
      toEnd();
    }
  }).observe(pane, { childList: true, subtree: true, characterData: true });
  toEnd();
}

// htmx:load fires for the body once ready and for every fragment a swap brings in.
htmx.onLoad((root) => {
  showAges(root);
  within(root, FOLLOW).forEach(follow);
});
window.setInterval(() => showAges(document.body), REFRESH_MS);
