// Server-rendered pages: escaping and the one layout every dashboard page shares.
#pragma once

#include <svc/sdk/html.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::plugins::dashboard {

/// @return text safe inside HTML element content and quoted attribute values.
inline std::string escape(std::string_view text) {
  return sdk::htmlEscape(text);
}

/// @return text percent-encoded for a URL query value.
std::string urlEncode(std::string_view text);

/// What a page needs around its content.
struct PageFrame {
  std::string title;       ///< The page's title (plain text).
  std::string prefix;      ///< The dashboard's path prefix, for links.
  std::string user_email;  ///< The signed-in person, or empty.
  std::string csrf;        ///< The CSRF token for the sign-out form (signed in only).
  std::string nonce;       ///< The CSP nonce of this response's inline style and scripts.
  /// The navigation after the dashboard's own entries: (path below the prefix, label).
  std::vector<std::pair<std::string, std::string>> nav;
  /// A contributed page's script (the body of `function (svc)`), or empty.
  std::string page_script;
  /// Same-origin scripts loaded, in order, before page_script.
  std::vector<std::string> script_urls;
};

/// @return a whole HTML document: content (already HTML) inside the shared layout.
std::string page(const PageFrame& frame, const std::string& content);

}  // namespace svc::plugins::dashboard
