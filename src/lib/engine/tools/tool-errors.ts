import "server-only";
import { InvalidToolInputError, NoSuchToolError } from "ai";
import { z } from "zod";

/**
 * What a model is told when its tool call could not run: for arguments that fail
 * validation, each field to fix and why — weaker local models garble arguments often,
 * and a vague error makes them repeat the same mistake.
 */
export function describeToolError(error: unknown): string {
  if (InvalidToolInputError.isInstance(error)) {
    const issues = findZodIssues(error.cause);
    if (issues.length > 0) {
      const fields = issues.map(
        (issue) => `\`${issue.path.length ? issue.path.join(".") : "(the arguments)"}\`: ${issue.message}`,
      );
      return `Error: invalid arguments for ${error.toolName}. Fix ${fields.length === 1 ? "this field" : "these fields"} and call ${error.toolName} again: ${fields.join("; ")}.`;
    }
    return `Error: the arguments for ${error.toolName} are not a valid JSON object (${error.toolInput.slice(0, 200)}). Send a JSON object with the fields the tool describes.`;
  }
  if (NoSuchToolError.isInstance(error)) {
    return `Error: there is no tool named ${error.toolName}.${error.availableTools?.length ? ` Available tools: ${error.availableTools.join(", ")}.` : ""}`;
  }
  return `Error: ${error instanceof Error ? error.message : String(error)}`;
}

/** The zod issues somewhere down an error's cause chain. */
function findZodIssues(error: unknown): z.core.$ZodIssue[] {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (current instanceof z.ZodError) return current.issues;
    if (typeof current === "object" && "issues" in current && Array.isArray((current as { issues: unknown }).issues)) {
      return (current as { issues: z.core.$ZodIssue[] }).issues;
    }
    current = typeof current === "object" && "cause" in current ? (current as { cause: unknown }).cause : undefined;
  }
  return [];
}

/** A uuid when the text is one; undefined otherwise: an optional id a model garbled is ignored, not an error. */
export function optionalId(value: string | null | undefined): string | undefined {
  const parsed = z.uuid().safeParse(value?.trim());
  return parsed.success ? parsed.data.toLowerCase() : undefined;
}
