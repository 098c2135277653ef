import ReactMarkdown, { type Components } from "react-markdown";
import rehypeSanitize from "rehype-sanitize";
import remarkGfm from "remark-gfm";

/** Only absolute http(s) URLs survive; anything else (javascript:, data:, relative) is dropped. */
function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.toString() : "";
  } catch {
    return "";
  }
}

type TreeNode = { type: string; value?: string; children?: TreeNode[] };

/** HTML written in the text is shown as the text it is (sanitizing alone would silently drop it). */
function rawHtmlAsText() {
  const walk = (node: TreeNode) => {
    for (const child of node.children ?? []) {
      if (child.type === "raw") child.type = "text";
      else walk(child);
    }
  };
  return (tree: TreeNode) => walk(tree);
}

const components: Components = {
  a: ({ href, children }) =>
    href ? (
      <a href={href} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    ) : (
      <span>{children}</span>
    ),
  // Images are never loaded (a model could point them anywhere): show a link instead.
  img: ({ src, alt }) => {
    const href = typeof src === "string" ? safeUrl(src) : "";
    const label = `image: ${alt || "untitled"}`;
    return href ? (
      <a href={href} target="_blank" rel="noopener noreferrer nofollow" className="md-image-link">
        [{label}]
      </a>
    ) : (
      <span className="md-image-link">[{label}]</span>
    );
  },
};

/**
 * Model, tool and person text as Markdown. Raw HTML in the source is shown as text
 * (react-markdown never parses it), the result is sanitized, links are http(s) only.
 */
export function Markdown({ text, className }: { text: string; className?: string }) {
  return (
    <div className={className ? `markdown ${className}` : "markdown"}>
      <ReactMarkdown
        remarkPlugins={[remarkGfm]}
        rehypePlugins={[rawHtmlAsText, rehypeSanitize]}
        urlTransform={safeUrl}
        components={components}
      >
        {text}
      </ReactMarkdown>
    </div>
  );
}
