// htmx's SSE extension ships no types; it is imported only for its side effect, registering the
// "sse" extension with htmx.
declare module "htmx-ext-sse";
