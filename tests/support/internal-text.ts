// Detectors for internal text on a page: ids, the engine's own phrases (derived from the
// modules that build them, so a new phrase is scanned without touching this file), SQL,
// stack traces and raw tool names. Used by tests/e2e/plain-words.test.ts.
import type { Page } from "playwright-core";
import * as formats from "@/lib/core/formats";
import * as prompts from "@/lib/core/prompts";
import { toolCatalogue } from "@/lib/engine/tool-policies";

export type Finding = {
  detector: "uuid" | "engine phrase" | "sql" | "stack" | "tool name";
  match: string;
  context: string;
};

const SENTINEL = "\u0001";

/** Every string reachable from a value (arrays and plain objects walked). */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const item of value) strings(item, out);
  else if (value && typeof value === "object") for (const item of Object.values(value)) strings(item, out);
  return out;
}

/** What a module's exports write: constants as they are, functions called with placeholder arguments. */
function writtenBy(module: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const value of Object.values(module)) {
    if (typeof value === "function") {
      // A builder of text: called with placeholders, its fixed words are what remains around them.
      for (const args of [Array.from({ length: Math.max(1, value.length) }, () => SENTINEL), [[]], [{}]]) {
        try {
          strings((value as (...args: unknown[]) => unknown)(...args), out);
        } catch {
          // takes structured input: covered below or by the constants it shares
        }
      }
    } else strings(value, out);
  }
  return out;
}

/** The structured builders, called the way the engine calls them, with placeholder names. */
function writtenByBuilders(): string[] {
  const agent = (role: "lead" | "subordinate") => ({
    id: SENTINEL,
    name: SENTINEL,
    role,
    instructions: SENTINEL,
    parentAgentId: null,
    toolScope: null,
  });
  const team = { id: SENTINEL, name: SENTINEL, mission: SENTINEL };
  const members = [agent("lead"), { ...agent("subordinate"), id: SENTINEL.repeat(2) }];
  const openTasks = [{ id: SENTINEL, title: SENTINEL, status: "pending" }];
  const out: string[] = [];
  for (const role of ["lead", "subordinate"] as const) {
    const input = { agent: agent(role), team, members, openTasks, focus: SENTINEL } as unknown as Parameters<
      typeof prompts.workInstructions
    >[0];
    out.push(prompts.workInstructions(input), prompts.chatInstructions(input));
  }
  out.push(
    prompts.taskMessage({
      id: SENTINEL,
      title: SENTINEL,
      description: SENTINEL,
      source: "lead",
    } as unknown as Parameters<typeof prompts.taskMessage>[0]),
  );
  out.push(
    formats.formatDecisions([
      { toolName: SENTINEL, toolCallId: SENTINEL, status: "approved", decisionNote: SENTINEL },
      { toolName: SENTINEL, toolCallId: SENTINEL, status: "denied", decisionNote: SENTINEL },
    ]),
  );
  out.push(formats.formatOpenTasks(openTasks, SENTINEL), formats.formatOpenTasks([], null));
  return out;
}

/**
 * The engine's phrases: the fixed words of every text formats.ts and prompts.ts write, cut at
 * placeholders, SQL wildcards, lines and clauses. Pieces shorter than 12 characters are too
 * common to tell an engine phrase from a person's words ("Task from "), unless they carry an
 * engine mark (an "id:", a bracket).
 */
export function enginePhrases(): string[] {
  const pieces = new Set<string>();
  for (const written of [...writtenBy(formats), ...writtenBy(prompts), ...writtenByBuilders()]) {
    // What a placeholder became when a builder took it whole ("[object Object]", "undefined", JSON) is a placeholder too.
    const text = written.replace(/\[object Object\]|\bundefined\b|"\\u0001"|\{\}|\[\]/g, SENTINEL);
    for (const part of text.split(new RegExp(`[${SENTINEL}%\\n]`))) {
      const clauses = [part, ...part.split(/(?<=[.:;!?])\s+|, /)];
      for (const clause of clauses) {
        const piece = clause.trim().replace(/^[-*#\s]+/, "");
        if (piece.length >= 12 || (/\bid:|[[(]/.test(piece) && piece.length >= 7)) pieces.add(piece);
      }
    }
  }
  return [...pieces].sort((a, b) => b.length - a.length);
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const SQL = [
  /\bselect\b[\s\S]{0,200}?\bfrom\b/gi,
  /\binsert into\b/gi,
  /\bupdate\s+"?\w+"?\s+set\b/gi,
  /\bdelete from\b/gi,
  /failed query/gi,
  /\bparams:/gi,
];
const STACK = [/\bat \S+ \(?[^\s()]+:\d+:\d+\)?/g, /\b\w*Error: [^\n]*\n\s+at /g, /node_modules\//g];

function around(text: string, index: number, length: number): string {
  return text.slice(Math.max(0, index - 60), index + length + 60).replace(/\s+/g, " ");
}

function matchAll(text: string, pattern: RegExp, detector: Finding["detector"], out: Finding[]): void {
  for (const match of text.matchAll(pattern))
    out.push({ detector, match: match[0].slice(0, 80), context: around(text, match.index, match[0].length) });
}

/** SQL and stack fragments: never on a page, not even inside a Details disclosure. */
function technicalFindings(text: string): Finding[] {
  const out: Finding[] = [];
  for (const pattern of SQL) matchAll(text, pattern, "sql", out);
  for (const pattern of STACK) matchAll(text, pattern, "stack", out);
  return out;
}

/** Everything internal in a page's visible text. `withoutCode`: the same text without the settings lists' code, for tool names. */
function internalFindings(text: string, withoutCode: string, phrases = enginePhrases()): Finding[] {
  const out: Finding[] = [];
  matchAll(text, UUID, "uuid", out);
  let rest = text;
  for (const phrase of phrases) {
    // Longest first, and each occurrence counted once: a clause inside a reported sentence is not a second finding.
    let at = rest.indexOf(phrase);
    while (at >= 0) {
      out.push({ detector: "engine phrase", match: phrase.slice(0, 80), context: around(rest, at, phrase.length) });
      rest = rest.slice(0, at) + " ".repeat(phrase.length) + rest.slice(at + phrase.length);
      at = rest.indexOf(phrase, at + phrase.length);
    }
  }
  out.push(...technicalFindings(text));
  for (const { name } of toolCatalogue()) matchAll(withoutCode, new RegExp(`\\b${name}\\b`, "g"), "tool name", out);
  return out;
}

/** The page's visible text, the same without the settings lists' code, and the text of every Details disclosure (open or not). */
async function pageTexts(page: Page): Promise<{ visible: string; withoutCode: string; disclosures: string }> {
  return page.evaluate(() => {
    const visible = document.body.innerText;
    const style = document.createElement("style");
    // Only settings lists may show a tool's technical name, as code beside its label.
    style.textContent =
      ".policy-row code, .scopes code, .mcp-tools code, .mcp-tool-chips code { display: none !important; }";
    document.head.append(style);
    const withoutCode = document.body.innerText;
    style.remove();
    // Text nodes one by one: textContent would glue "Details" to what follows and hide a word's start.
    const disclosures = [...document.querySelectorAll("details")]
      .map((element) => {
        const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
        const parts: string[] = [];
        while (walker.nextNode()) parts.push(walker.currentNode.textContent ?? "");
        return parts.join(" ");
      })
      .join("\n");
    return { visible, withoutCode, disclosures };
  });
}

/** Scans the page as it is shown now. */
export async function scanPage(page: Page, phrases = enginePhrases()): Promise<Finding[]> {
  const { visible, withoutCode, disclosures } = await pageTexts(page);
  return [
    ...internalFindings(visible, withoutCode, phrases),
    ...technicalFindings(disclosures).filter((finding) => !visible.includes(finding.match)),
  ];
}
