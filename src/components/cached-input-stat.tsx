import { formatShare, formatUsd, type CacheFigures } from "@/lib/usage/format";

/**
 * One tile of a `.stats` list: the share of input the provider served from its prompt cache,
 * and under it what that saved. "none" when nothing was cached, a dash when there was no input.
 */
export function CachedInputStat({ figures }: { figures: CacheFigures }) {
  return (
    <div>
      <dt>Input cached</dt>
      <dd>
        {figures.inputTokens <= 0 ? "—" : figures.cachedTokens <= 0 ? "none" : formatShare(figures.cachedShare)}
        {figures.savedUsd > 0 && <span className="stat-note">saved {formatUsd(figures.savedUsd)}</span>}
      </dd>
    </div>
  );
}
