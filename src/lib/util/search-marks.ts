// How a search snippet marks its matches: private-use characters, which no message is
// expected to hold (they are removed before the snippet is made), so the page marks them
// without reading HTML. Client-safe: the search query and the results page share them.
export const MATCH_START = "\uE000";
export const MATCH_END = "\uE001";
