/*
 * sk/sk.h -- libsk, the sovereign-keys core.  Include this one header.
 *
 * Conventions: functions return 0 on success and -1 on failure, outputs
 * come first, every buffer has a length, the last argument is an optional
 * sk_err_t *.  Time is a parameter (now), never read inside.  Objects are
 * opaque and freed by their sk_*_free, which accepts NULL.  libsk keeps no
 * global state beyond OpenSSL's and is safe to use from several threads on
 * distinct objects.
 */
#ifndef SK_SK_H
#define SK_SK_H

#define SK_VERSION "0.1.0"

#include "err.h"
#include "file.h"
#include "b64.h"
#include "name.h"
#include "services.h"
#include "key.h"
#include "entry.h"
#include "record.h"
#include "carrier.h"
#include "onion.h"
#include "cache.h"
#include "db.h"
#include "merkle.h"
#include "nonce.h"
#include "map.h"
#include "evidence.h"
#include "client.h"
#include "route.h"
#include "staple.h"
#include "tls.h"
#include "mint.h"
#include "http_head.h"

#endif
