// The shapes of the email plugin's resources and request bodies (sdk/schema.h), as its routes
// declare them and its events carry them. Component names start with `Email` where another
// plugin could use the word (`EmailMessage`; sms has its own `SmsMessage`).
#pragma once

#include <svc/sdk/schema.h>

namespace svc::plugins::email {

/// `{name, kind, status, created_dt, dns_record?}`: a platform or custom domain.
sdk::Schema domainSchema();
/// `{id, address, identity, is_primary, created_dt}`.
sdk::Schema inboxSchema();
/// `{available, email}`: the answer of check-availability.
sdk::Schema availabilitySchema();
/// `{thread_id, inbox, identity, subject, preview, ...}`: a thread in the list.
sdk::Schema threadSchema();
/// `{thread_id, subject, messages}`: a thread with its messages, oldest first.
sdk::Schema threadDetailSchema();
/// `{uuid, filename, content_type, size}`.
sdk::Schema attachmentSchema();
/// A message as GET shows it; lists and events leave out its bodies and attachments (optional
/// here), and only outgoing messages show `bcc`.
/// An outgoing message's `bounce` (nullable): which recipients bounced, and why.
sdk::Schema bounceSchema();
sdk::Schema messageSchema();

/// POST /api/domains/: `{name}`.
sdk::Schema domainInputSchema();
/// POST /api/email/: `{identity?, email?}`.
sdk::Schema inboxInputSchema();
/// PUT /api/email-messages/{id}/: `{is_read}` (PATCH: its partial).
sdk::Schema messageInputSchema();
/// compose: `{to_email, subject, content, cc?, bcc?, attachment_uuids?}`.
sdk::Schema composeSchema();
/// reply and reply-all: `{content, cc?, bcc?, attachment_uuids?}`.
sdk::Schema replySchema();
/// forward: `{to_email, content, cc?, bcc?, attachment_uuids?}`.
sdk::Schema forwardSchema();

}  // namespace svc::plugins::email
