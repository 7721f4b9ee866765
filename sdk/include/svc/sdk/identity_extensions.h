// Identity extensions: how plugins add their part to an identity (the email plugin its inbox,
// `email`; the SMS plugin its number, `phone`; a third party anything of its own).
//
// The identities plugin owns the identity and names no other plugin. It offers
// kIdentityExtensionsService. A plugin that cannot work without identities lists `identities`
// in PluginInfo::requires_plugins and adds its extension in configure(); one that merely adds to
// identities when they exist (the SDK's hello example) lists the service in uses_services and
// adds its extension in start(), when find() gives it.
// An extension then takes part in every identity:
//   - create: the kernel checks the body's fields against their declared shapes (IdentityField::
//     schema; the identity's routes declare them once every extension is added), validate()
//     checks what a shape cannot say before anything is written, and
//     provision() runs inside the identity's own transaction, after its row is inserted (throwing
//     rolls the whole identity back: a taken address leaves no identity behind);
//   - update: a field marked `updatable` may also be sent to `PUT`/`PATCH /api/identities/{uuid}/`
//     (a per-identity setting, such as contacts' `auto_contacts`); update() applies it inside the
//     identity's update transaction;
//   - every view: describe() gives the value of its member of the identity's JSON (null for an
//     identity it has nothing for), in lists, single reads and the identity.* events alike;
//   - actions: `POST /api/identities/{uuid}/<action>/` for each of its actions, the identity fenced
//     to the caller before act() runs.
// Extensions run in the order of their capabilities' names. Their methods are called from many
// request threads at once.
//
// The contract's identity resource has members for capabilities whose plugin may be disabled
// (`email`, `phone`): contractIdentityCapabilities() lists them, so an identity always shows them
// (null) and a create body or action that asks for a missing one is refused with
// `feature_not_enabled` (422 for a field, 404 for an action) naming the capability, creating
// nothing.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>
#include <svc/sdk/services.h>

#include <Poco/Data/Session.h>
#include <Poco/Dynamic/Var.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace svc::sdk {

/// A create-body field a capability owns.
struct IdentityField {
  enum class Type { kString, kBoolean };
  std::string name;           ///< `email_identifier`.
  Type type = Type::kString;  ///< What JSON type it takes (null is always allowed: absent).
  /// Whether `PUT`/`PATCH /api/identities/{uuid}/` takes it too: then the identities plugin calls
  /// the extension's update() when such a body carries it (a setting, not a resource to provision).
  bool updatable = false;
  /// Its shape (the kernel checks it, the API description shows it); null is always allowed.
  /// Default: a string or a boolean, as `type` says.
  std::optional<Schema> schema{};
};

/// A part of the identity resource.
struct IdentityCapability {
  /// The identity's JSON member it fills (`email`): `[a-z][a-z0-9_]*`, unique, and none of the
  /// identity's own (`uuid`, `name`, `created_dt`, `updated_dt`); fields likewise. Actions are
  /// `[a-z][a-z0-9-]*` (not `voice-agent`). add() refuses others.
  std::string name;
  std::vector<IdentityField> create_fields;  ///< Create-body fields it owns.
  std::vector<std::string> actions;          ///< Its actions: `provision-phone` is served at
                                             ///< `POST /api/identities/{uuid}/provision-phone/`.
  /// What describe() gives, for the API description and the test suites' response check; null
  /// is always allowed (an identity it has nothing for). Default: any value.
  std::optional<Schema> view{};
};

/// @return the capabilities the contract's identity resource always shows, provided or not:
/// `email` (fields `email_identifier`, `domain`) and `phone` (field `provision_phone`, action
/// `provision-phone`).
const std::vector<IdentityCapability>& contractIdentityCapabilities();

/// The identity an extension works on.
struct IdentityInfo {
  std::string uuid;        ///< Its id.
  std::string account_id;  ///< Its account.
  std::string name;        ///< Its display name.
};

/// One plugin's part of identities.
class IdentityExtension {
 public:
  virtual ~IdentityExtension();
  /// @return what it provides (fixed for the extension's life).
  virtual const IdentityCapability& capability() const = 0;
  /// Checks the create body's fields it owns, before anything is written.
  /// @param request the create request (its JSON body). @throws HttpError 400 naming the field.
  virtual void validate(const Request& request) = 0;
  /// Before the identity's transaction (after every extension's validate()), for work that must
  /// not run inside it, such as a carrier's purchase that takes seconds: reserve here, use in
  /// provision(), give back in finish(). The default does nothing.
  /// @throws HttpError to refuse (nothing is created; finish() is called for the extensions
  /// prepared before).
  virtual void prepare(const IdentityInfo& identity, const Request& request);
  /// After the identity's transaction, committed or not, for every extension that was prepared.
  /// @param created whether the identity now exists. The default does nothing. Must not throw.
  virtual void finish(const IdentityInfo& identity, const Request& request, bool created);
  /// Provisions the new identity's part, inside the identity's transaction.
  /// @param transaction the session of that transaction. @param identity the new identity.
  /// @param request the create request. @return the member's value for the new identity (what
  /// describe() will say once the transaction commits), or an empty Var for null.
  /// @throws HttpError to refuse (the identity rolls back).
  virtual Poco::Dynamic::Var provision(Poco::Data::Session& transaction,
                                       const IdentityInfo& identity, const Request& request) = 0;
  /// Applies a `PUT`/`PATCH /api/identities/{uuid}/` body's updatable fields it owns, inside the
  /// identity's update transaction. Called only when the body carries (even as null) one of its
  /// capability's `updatable` create_fields. The default changes nothing.
  /// @param transaction the session of that transaction. @param identity the identity.
  /// @param request the PUT/PATCH request. @return the member's value after the change (what
  /// describe() will say once the transaction commits), or nullopt when it stays as describe()
  /// says now. @throws HttpError (400 naming the field) to refuse: the whole update rolls back.
  virtual std::optional<Poco::Dynamic::Var> update(Poco::Data::Session& transaction,
                                                   const IdentityInfo& identity,
                                                   const Request& request);
  /// @param identity_uuids identities of one account. @return the member's value (usually an
  /// Object) for each identity that has one; the others show null.
  virtual std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& identity_uuids) = 0;
  /// Runs one of capability().actions for an identity the caller may reach.
  /// @param action the action. @param identity the identity. @param request the request.
  /// @return the answer (as the contract says for that action).
  virtual Response act(const std::string& action, const IdentityInfo& identity,
                       Request& request) = 0;
};

/// The content type of act()'s answer that means "the identity itself": the identities plugin
/// answers it with the identity as GET shows it after the action, every member filled in (the
/// contract's `provision-phone` answers 200 with the identity).
inline constexpr const char* kIdentityViewAnswer = "application/vnd.svc.identity-view";

/// @param status the answer's status. @return act()'s answer meaning "the identity, as it is now".
inline Response identityView(int status = 200) {
  Response r;
  r.status = status;
  r.content_type = kIdentityViewAnswer;
  return r;
}

/// Where extensions are added. Offered by the identities plugin.
class IdentityExtensions {
 public:
  virtual ~IdentityExtensions();
  /// Adds an extension (in configure() or start()). @throws std::invalid_argument when its
  /// capability's name, a create field or an action is already another extension's.
  virtual void add(std::shared_ptr<IdentityExtension> extension) = 0;
};

/// The key of the IdentityExtensions service.
inline constexpr ServiceKey<IdentityExtensions> kIdentityExtensionsService{
    "svc.identity-extensions.v1"};

/// An identity's voice-agent settings (`/api/identities/{uuid}/voice-agent/`).
struct VoiceAgentSettings {
  std::string response_url;  ///< Where its calls are handed.
  bool enabled = false;      ///< Whether the agent answers.
};

/// The voice-agent settings, for the plugin that answers calls. Offered by the identities plugin.
class VoiceAgentDirectory {
 public:
  virtual ~VoiceAgentDirectory();
  /// @param identity_uuid an identity. @return its settings, or nullopt when it has none.
  virtual std::optional<VoiceAgentSettings> voiceAgent(const std::string& identity_uuid) = 0;
};

/// The key of the VoiceAgentDirectory service.
inline constexpr ServiceKey<VoiceAgentDirectory> kVoiceAgentService{"svc.voice-agents.v1"};

}  // namespace svc::sdk
