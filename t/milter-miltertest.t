#!/usr/bin/perl
# sk-milter driven directly with miltertest (Lua): the per-message cases,
# including missing macros, forged and huge headers, a garbage peer,
# Mode reject replies.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Socket::INET;
use Test::More;
use SKTest;

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'no miltertest') unless has_cmd('miltertest');

my $dir = tmpdir();
spew("$dir/trust", "example.com smtp\nweb.example https\n");

sub start_milter {
    my ($name, @extra) = @_;
    my $port = free_port();
    spew("$dir/$name.conf", join('', map { "$_\n" }
        "Socket inet:$port\@127.0.0.1", 'AuthservID mx.example.org',
        "TrustFile $dir/trust", 'Syslog no', @extra));
    my $pid = run_daemon([$skm, '-f', '-c', "$dir/$name.conf"],
        "$dir/$name.log");
    wait_for_port($port) or die "sk-milter $name did not start";
    return ($pid, $port);
}

# Lua: one message; die with a message unless every check holds.
my $prelude = <<'LUA';
function msg(port, macros, from, headers)
    local conn = mt.connect("inet:" .. port .. "@127.0.0.1", 20, 0.1)
    if conn == nil then error("connect failed") end
    if macros ~= nil then
        if mt.macro(conn, SMFIC_MAIL, (table.unpack or unpack)(macros)) ~= nil then
            error("macro") end
    end
    if mt.mailfrom(conn, from) ~= nil then error("mailfrom") end
    for i, h in ipairs(headers) do
        if mt.header(conn, h[1], h[2]) ~= nil then error("header " .. i) end
    end
    if mt.eom(conn) ~= nil then error("eom") end
    return conn
end
function expect_ar(conn, pattern)
    if mt.getreply(conn) ~= SMFIR_CONTINUE then error("not continue") end
    if not mt.eom_check(conn, MT_HDRINSERT, "Authentication-Results") then
        error("no Authentication-Results inserted") end
    local h = mt.getheader(conn, "Authentication-Results", 0)
    if h == nil or not string.find(h, pattern) then
        error("header is " .. tostring(h) .. ", wanted " .. pattern) end
end
TLS = { "{tls_version}", "TLSv1.3", "{daemon_name}", "smtpd" }
PLAIN = { "{daemon_name}", "smtpd", "{client_addr}", "127.0.0.1" }
LUA

my $n = 0;
sub lua {
    my ($port, $body, $name) = @_;
    $n++;
    spew("$dir/t$n.lua", "PORT = $port\n$prelude\n"
        . "if unpack == nil then unpack = table.unpack end\n$body\n");
    my $r = run_cmd(['miltertest', '-s', "$dir/t$n.lua"]);
    is($r->{rc}, 0, $name) or diag($r->{out} . $r->{err});
}

my ($vpid, $vport) = start_milter('verify');

lua($vport, <<'LUA', 'TLS macro: sk=pass');
c = msg(PORT, TLS, "<a@example.com>", { { "From", "A <a@example.com>" } })
expect_ar(c, "^mx%.example%.org;%s+sk=pass %(TLSv1%.3 for smtp service%)%s+smtp%.mailfrom=example%.com%s+header%.from=example%.com$")
LUA
lua($vport, <<'LUA', 'no TLS macro: sk=fail (plaintext)');
c = msg(PORT, PLAIN, "<a@example.com>", { { "From", "a@example.com" } })
expect_ar(c, "sk=fail %(plaintext for smtp service%)")
LUA
lua($vport, <<'LUA', 'no macros at all: sk=permerror');
c = msg(PORT, nil, "<a@example.com>", { { "From", "a@example.com" } })
expect_ar(c, "sk=permerror %(the MTA sent no TLS macros%)")
LUA
lua($vport, <<'LUA', 'header From decides when the envelope has no SK');
c = msg(PORT, PLAIN, "<bounce@nosk.example>", { { "From", "a@EXAMPLE.com" } })
expect_ar(c, "sk=fail %(plaintext for smtp service%)%s+smtp%.mailfrom=nosk%.example%s+header%.from=example%.com")
LUA
lua($vport, <<'LUA', 'SK without smtp: sk=none');
c = msg(PORT, PLAIN, "<a@web.example>", { { "From", "a@web.example" } })
expect_ar(c, "sk=none %(sovereign key does not cover smtp%)")
LUA
lua($vport, <<'LUA', 'null sender, no From: sk=none');
c = msg(PORT, PLAIN, "<>", { { "Subject", "x" } })
expect_ar(c, "sk=none %(no sender domain%)")
LUA
lua($vport, <<'LUA', 'two From headers: sk=permerror');
c = msg(PORT, TLS, "<a@example.com>", { { "From", "a@example.com" },
    { "From", "b@example.com" } })
expect_ar(c, "sk=permerror %(2 From: headers%)")
LUA
lua($vport, <<'LUA', 'forged A-R removed, foreign A-R kept');
c = msg(PORT, TLS, "<a@example.com>", {
    { "Authentication-Results", "other.example; sk=pass" },
    { "Authentication-Results", "(comment) MX.Example.ORG; sk=pass" },
    { "Authentication-Results", "mx.example.org.evil; sk=pass" },
    { "Authentication-Results", "mx.example.org 1; sk=pass" } })
expect_ar(c, "sk=pass")
if not mt.eom_check(c, MT_HDRDELETE, "Authentication-Results") then
    error("forged header not deleted") end
LUA
lua($vport, <<'LUA', '1000-byte headers (miltertest crashes on more): no crash, verdict still made');
c = msg(PORT, TLS, "<a@example.com>", { { "X-Big", string.rep("x", 1000) },
    { "From", string.rep("n", 900) .. " <a@example.com>" } })
expect_ar(c, "sk=pass")
LUA

# A garbage peer: the milter drops it and keeps serving.
for my $junk ("\x00\x00\x00\x05Xabcd", "\xff\xff\xff\xffjunk",
    join('', map { chr(int(rand(256))) } 1 .. 4096))
{
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$vport");
    print $s $junk if $s;
    close $s if $s;
}
ok(daemon_alive($vpid), 'garbage peers: milter alive');
lua($vport, <<'LUA', 'garbage peers: next message still checked');
c = msg(PORT, TLS, "<a@example.com>", { { "From", "a@example.com" } })
expect_ar(c, "sk=pass")
LUA

my ($rpid, $rport) = start_milter('reject', 'Mode reject');
lua($rport, <<'LUA', 'Mode reject: plaintext refused with 550 5.7.1');
c = msg(PORT, PLAIN, "<a@example.com>", { { "From", "a@example.com" } })
if mt.getreply(c) ~= SMFIR_REPLYCODE then error("not a reply code") end
if not mt.eom_check(c, MT_SMTPREPLY, "550", "5.7.1",
    "sk-milter: sovereign key policy: plaintext for smtp service") then
    error("wrong reply") end
if mt.eom_check(c, MT_HDRINSERT) then error("header added") end
LUA
lua($rport, <<'LUA', 'Mode reject: missing macros tempfail 451 4.7.0');
c = msg(PORT, nil, "<a@example.com>", { { "From", "a@example.com" } })
if not mt.eom_check(c, MT_SMTPREPLY, "451", "4.7.0",
    "sk-milter: cannot check: the MTA sent no TLS macros") then
    error("wrong reply") end
LUA
lua($rport, <<'LUA', 'Mode reject: TLS passes with the header');
c = msg(PORT, TLS, "<a@example.com>", { { "From", "a@example.com" } })
expect_ar(c, "sk=pass")
LUA

# KeyCache: a dead Redis is a tempfail, never a pass or a crash; a
# directory without the name's record is sk=none; a garbage record is
# a tempfail too (it does not verify).
my $dead = free_port();
my ($dpid, $dport) = start_milter('dead', "KeyCache redis://127.0.0.1:$dead",
    'LookupTimeout 200');
lua($dport, <<'LUA', 'dead KeyCache: tempfail 451 4.7.0');
c = msg(PORT, TLS, "<a@nosk.example>", { { "From", "a@nosk.example" } })
if mt.getreply(c) ~= SMFIR_REPLYCODE then error("not a reply code") end
if not mt.eom_check(c, MT_SMTPREPLY, "451", "4.7.0",
    "sk-milter: sovereign key lookup failed, try again later") then
    error("wrong reply") end
LUA
lua($dport, <<'LUA', 'dead KeyCache: TrustFile domains still checked');
c = msg(PORT, PLAIN, "<a@example.com>", { { "From", "a@example.com" } })
expect_ar(c, "sk=fail")
LUA
ok(daemon_alive($dpid), 'dead KeyCache: milter alive');
like(slurp("$dir/dead.log"), qr/sovereign key lookup failed: .*127\.0\.0\.1/,
    'dead KeyCache: logged');
mkdir "$dir/cache";
mkdir "$dir/cache/record";
spew("$dir/cache/record/garbage.example", "Type: Bind\n\x00junk\n");
my ($kpid, $kport) = start_milter('dir', "KeyCache $dir/cache");
lua($kport, <<'LUA', 'KeyCache dir without a record: sk=none');
c = msg(PORT, TLS, "<a@nosk.example>", { { "From", "a@nosk.example" } })
expect_ar(c, "sk=none %(no sovereign key%)")
LUA
lua($kport, <<'LUA', 'KeyCache garbage record: tempfail');
c = msg(PORT, TLS, "<a@garbage.example>", { { "From", "a@garbage.example" } })
if not mt.eom_check(c, MT_SMTPREPLY, "451", "4.7.0",
    "sk-milter: sovereign key lookup failed, try again later") then
    error("wrong reply") end
LUA
is(stop_daemon($dpid), 0, 'dead-cache milter: clean exit');
is(stop_daemon($kpid), 0, 'dir-cache milter: clean exit');

is(stop_daemon($vpid), 0, 'verify milter: clean exit');
is(stop_daemon($rpid), 0, 'reject milter: clean exit');
done_testing();
