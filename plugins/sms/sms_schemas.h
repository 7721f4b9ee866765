// The shapes of the sms plugin's resources and request bodies (sdk/schema.h), as its routes
// declare them and its events carry them. Component names start with `Sms` where another plugin
// could use the word (`SmsMessage`; email has `EmailMessage`).
#pragma once

#include <svc/sdk/schema.h>

namespace svc::plugins::sms {

/// `{id, number, country_code, identity, created_dt, updated_dt}`.
sdk::Schema phoneSchema();
/// An SMS as GET shows it; events leave out `body` (optional here).
sdk::Schema smsMessageSchema();
/// `{conversation_id, phone, identity, phone_number, preview, ...}`: a conversation in the list.
sdk::Schema conversationSchema();
/// A conversation with its messages, oldest first.
sdk::Schema conversationDetailSchema();
/// `{id, phone, identity, from_number, to_number, created_dt}`: the object of `call.received`.
sdk::Schema callSchema();

/// POST /api/messages/send/: `{to_number, body}`.
sdk::Schema sendSchema();
/// PUT /api/messages/{id}/: `{is_read}` (PATCH: its partial).
sdk::Schema smsMessageInputSchema();
/// POST /admin/sms/inject/ (operator): `{to, from, body}`.
sdk::Schema injectSchema();

}  // namespace svc::plugins::sms
