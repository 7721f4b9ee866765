#!/usr/bin/env bash
# Checks the documentation's map: every relative link in every Markdown file of the repository
# (tracked, or new and not ignored; node_modules left out) must name a file or directory that
# exists. Links to other sites (http, https, mailto, any scheme) and links within a page (#anchor)
# are not followed, and an anchor after a path is dropped before the path is checked. Links in
# code blocks and code spans are not links. Prints each broken link as `file: link` and exits 1
# when there is one. No network.
#
#   tools/check_docs.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# The links of one Markdown file, one per line: inline `[text](target "title")` and `![alt](...)`,
# and reference definitions `[id]: target`. Fenced code blocks and code spans are skipped.
links_of() {
  awk '
    /^[ \t]*(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    {
      line = $0
      gsub(/``([^`]|`[^`])*``/, "", line)   # double-backtick spans (which may hold a backtick)
      gsub(/`[^`]*`/, "", line)             # code spans
      if (match(line, /^ ? ? ?\[[^]]+\]:[ \t]+[^ \t]+/)) {
        def = substr(line, RSTART, RLENGTH)
        sub(/^ ? ? ?\[[^]]+\]:[ \t]+/, "", def)
        print def
      }
      while (match(line, /\]\([^)]*\)/)) {
        target = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        sub(/^[ \t]+/, "", target)
        sub(/[ \t]+("[^"]*"|'"'"'[^'"'"']*'"'"')[ \t]*$/, "", target)  # a title
        sub(/^</, "", target); sub(/>$/, "", target)
        if (target != "") print target
      }
    }' "$1"
}

broken=0
while IFS= read -r -d '' file; do
  case "$file" in */node_modules/*|node_modules/*) continue ;; esac
  [ -f "$file" ] || continue  # deleted in the work tree
  dir=$(dirname "$file")
  while IFS= read -r link; do
    case "$link" in
      \#*) continue ;;                                   # within the page
    esac
    if [[ "$link" =~ ^[A-Za-z][A-Za-z0-9+.-]*: ]]; then  # http:, https:, mailto:...
      continue
    fi
    path=${link%%#*}
    path=${path%%\?*}
    path=${path//%20/ }
    [ -n "$path" ] || continue
    if [[ "$path" == /* ]]; then
      resolved=".$path"                                  # from the repository's root
    else
      resolved="$dir/$path"
    fi
    if [ ! -e "$resolved" ]; then
      echo "$file: $link"
      broken=1
    fi
  done < <(links_of "$file")
done < <(git ls-files -z --cached --others --exclude-standard -- '*.md' | sort -zu)

exit "$broken"
