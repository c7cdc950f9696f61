#!/usr/bin/perl
# Outbound pinning: sk-milter answers a sending Postfix's
# smtp_tls_policy_maps over socketmap.  A destination whose served key
# has a valid carrier from the SK gets "fingerprint match=<its key>" and
# the mail is delivered; a destination with no carrier, a carrier for
# another key or one signed by another SK is TEMP: the mail is deferred
# and stays in the queue, and is delivered once the carrier is published
# in the KeyCache.  No SK: NOTFOUND.  Garbage on the socket is dropped.
#
# The next hops need DNS names that resolve to 127.0.0.1: the test runs
# in a private mount namespace (unshare -m) with its own /etc/hosts.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use Digest::SHA qw(sha256_hex);
use SKTest;
use SKPostfix qw(make_cert private_hosts_reexec private_hosts);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
for (qw(postfix smtp-sink swaks postmap)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}
my $why = private_hosts_reexec();
plan(skip_all => $why) if $why;
my $dir = tmpdir();
chmod 0755, $dir;               # Postfix's own users walk into dst/, src/
$why = private_hosts($dir,
    qw(mx.dest.example dest.example nosk.example mxless.example));
plan(skip_all => $why) if $why;

# Keys: the SK of mx.dest.example, another SK, the destination's keys.
my $r = sk('keygen', '-n', 'mx.dest.example', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});
$r = sk('keygen', '-n', 'mx.dest.example', '-o', "$dir/other-sk.key",
    '--no-backups-i-accept-the-risk');
my ($key, $crt) = make_cert($dir, 'mx.dest.example');
my ($okey, $ocrt) = make_cert($dir, 'other.dest.example');

sub carrier {
    my ($sk, $cert, $out, $svc, $name) = @_;
    my $r = sk('carrier', '-k', $sk, '-c', $cert, '-n',
        $name // 'mx.dest.example', '-s', $svc // 'smtp,smtps,submission',
        '-o', $out);
    is($r->{rc}, 0, "sk carrier $out") or diag($r->{err});
    return slurp($out);
}
my $good = carrier("$dir/sk.key", $crt, "$dir/good.pem");
my $other = carrier("$dir/sk.key", $ocrt, "$dir/otherkey.pem");
my $wrong = carrier("$dir/other-sk.key", $crt, "$dir/wrongsk.pem");
my $nosmtp = carrier("$dir/sk.key", $crt, "$dir/nosmtp.pem", 'https');
my $mxless = carrier("$dir/sk.key", $crt, "$dir/mxless.pem", undef,
    'mxless.example');
mkdir "$dir/rsa";
my ($rkey, $rcrt) = make_cert("$dir/rsa", 'mx.dest.example', 'rsa');
my $rsa = carrier("$dir/sk.key", $rcrt, "$dir/rsa.pem");
my $base = slurp($key) . slurp($crt);
my %chain = (good => $base . $good, none => $base, otherkey => $base . $other,
    wrongsk => $base . $wrong, nosmtp => $base . $nosmtp);
spew("$dir/chain-$_.pem", $chain{$_}, 0600) for keys %chain;
# RSA and ECDSA side by side: both with carriers, or only RSA's.
spew("$dir/dual-rsa.pem", slurp($rkey) . slurp($rcrt) . $rsa, 0600);
spew("$dir/dual-ec.pem", $chain{good}, 0600);
spew("$dir/half-ec.pem", $base, 0600);
spew("$dir/chain-mxless.pem", $base . $mxless, 0600);

# The destination: one Postfix, one listener per served chain.
mkdir "$dir/$_" for qw(dst src);
my $dst = SKPostfix->new(dir => "$dir/dst", chain => "$dir/chain-good.pem");
my %port;
for my $c (sort keys %chain) {
    $port{$c} = free_port();
    $dst->postconf('-M', "127.0.0.1:$port{$c}/inet=127.0.0.1:$port{$c} "
        . "inet n - n - - smtpd -o smtpd_tls_chain_files=$dir/chain-$c.pem");
}
for my $c (['dual', "$dir/dual-rsa.pem,$dir/dual-ec.pem"],
    ['half', "$dir/dual-rsa.pem,$dir/half-ec.pem"],
    ['mxless', "$dir/chain-mxless.pem"])
{
    $port{ $c->[0] } = free_port();
    $dst->postconf('-M', "127.0.0.1:$port{$c->[0]}/inet=127.0.0.1:"
        . "$port{$c->[0]} inet n - n - - smtpd -o smtpd_tls_chain_files="
        . $c->[1]);
}
$dst->start;

# sk-milter: milter socket unused here, policy socket on its own port.
my $cache = "$dir/cache";
mkdir $cache;
spew("$dir/trust", "mx.dest.example smtp,smtps,submission $dir/sk.key.pub\n"
    . "web.dest.example https $dir/sk.key.pub\n"
    . "mxless.example smtp $dir/sk.key.pub\n");
my ($mport, $pport) = (free_port(), free_port());
spew("$dir/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.src.example', 'Syslog no',
    "TrustFile $dir/trust", "KeyCache $cache",
    "PolicySocket inet:$pport\@127.0.0.1", 'PolicyTTL 60'));
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_for_port($pport), 'policy socket listens') or diag(slurp($log));

my $map = "socketmap:inet:127.0.0.1:$pport:sk";
sub pq {
    my ($k) = @_;
    my $r = run_cmd(['postmap', '-c', $dst->{etc}, '-q', $k, $map]);
    chomp(my $v = $r->{out});
    return ($r->{rc}, $v, $r->{err});
}

# The fingerprint, computed independently: SHA-256 of the DER SPKI.
my $spki = run_cmd(['sh', '-c', "openssl x509 -in $crt -pubkey -noout"
    . " | openssl pkey -pubin -outform DER"])->{out};
(my $fp = sha256_hex($spki)) =~ s/(..)(?!$)/$1:/g;

my $rspki = run_cmd(['sh', '-c', "openssl x509 -in $rcrt -pubkey -noout"
    . " | openssl pkey -pubin -outform DER"])->{out};
(my $rfp = sha256_hex($rspki)) =~ s/(..)(?!$)/$1:/g;

my ($rc, $v, $e) = pq("[mx.dest.example]:$port{dual}");
is(join(' ', sort split / /, $v), join(' ', sort 'fingerprint',
    "match=$fp", "match=$rfp"), 'RSA and ECDSA with carriers: both pinned')
    or diag($e . slurp($log));
($rc, $v, $e) = pq("[mx.dest.example]:$port{half}");
is($v, "fingerprint match=$rfp", 'only the key with a carrier is pinned')
    or diag($e);
($rc, $v, $e) = pq("[mx.dest.example]:$port{good}");
is($v, "fingerprint match=$fp", 'valid carrier: fingerprint of the served key')
    or diag($e . slurp($log));
($rc, $v, $e) = pq("mxless.example:$port{mxless}");
is($v, "fingerprint match=$fp",
    'a domain with an SK and no MX: the domain itself is checked')
    or diag($e . slurp($log));
# The carrier certifies the key for the host it names, as a client
# checks (docs/protocol.md, carrier-name): mx.dest.example's is not
# mxless.example's.
($rc, $v, $e) = pq("mxless.example:$port{good}");
isnt($v, "fingerprint match=$fp", 'a carrier for another host: not pinned');
like(slurp($log), qr/mxless\.example:\d+: carrier is for mx\.dest\.example, not mxless\.example/,
    '... the log names the carrier\'s host');
($rc, $v, $e) = pq("dest.example:$port{good}");
is($rc, 1, 'a domain with no SK: NOTFOUND') or diag("$v $e");
pq("dest.example:$port{good}");
is(scalar(() = slurp($log) =~ /policy dest\.example:\d+: NOTFOUND: /g), 1,
    '... logged once per PolicyTTL: its cached answer is not logged again');
($rc, $v, $e) = pq("[127.0.0.1]:$port{good}");
is($rc, 1, 'an IP literal: NOTFOUND');
($rc, $v, $e) = pq("[web.dest.example]:$port{good}");
is($rc, 1, 'an SK without smtp: NOTFOUND');
for my $c (qw(none otherkey wrongsk nosmtp)) {
    ($rc, $v, $e) = pq("[mx.dest.example]:$port{$c}");
    isnt($rc, 0, "carrier $c: no fingerprint");
    like($e, qr/temporary|TEMP|lookup error|problem/i,
        "carrier $c: a temporary lookup failure") or diag("$rc $v $e");
}
like(slurp($log), qr/for smtp: carrier for mx\.dest\.example: certifies key sha256:/,
    'log names the carrier for another key');
like(slurp($log), qr/the server presented no carrier/,
    'log names the missing carrier');

# A sending Postfix pinned through the map.
my $src = SKPostfix->new(dir => "$dir/src", main => {
    smtp_tls_policy_maps => $map,
    smtp_tls_fingerprint_digest => 'sha256',
    smtp_tls_security_level => 'may',
    transport_maps => "texthash:$dir/src-transport",
    smtp_host_lookup => 'native',
    smtp_tls_loglevel => 1,
});
spew("$dir/src-transport", join('', map {
    "$_.example smtp:[mx.dest.example]:$port{$_}\n" } sort keys %chain)
    . "nosk.example smtp:[nosk.example]:$port{good}\n");
$src->start;

sub send_to {
    my ($rcpt, $subj) = @_;
    return run_cmd(['swaks', '--server', '127.0.0.1', '--port',
        $src->{smtp}, '--from', 'alice@src.example', '--to', $rcpt,
        '--header', "Subject: $subj", '--timeout', '10']);
}
for my $c (sort keys %chain) {
    $r = send_to("bob\@$c.example", "to $c");
    is($r->{rc}, 0, "queued for $c.example") or diag($r->{out});
}
$r = send_to('bob@nosk.example', 'to nosk');
ok($dst->wait_messages(2, 20), 'two messages reached the destination')
    or diag($src->log);
my @subj = sort map { /^Subject: (.*?)\r?$/m ? $1 : () } $dst->messages;
is_deeply(\@subj, ['to good', 'to nosk'],
    'delivered: the pinned one and the one with no SK');
like($src->log, qr/Verified TLS connection established to mx\.dest\.example/,
    'Postfix verified the pinned fingerprint') or diag($src->log);

# Deferred, not lost.
sub queue {
    my $r = run_cmd(['postqueue', '-c', $src->{etc}, '-j']);
    return [ map { /"recipients":\s*\[\s*\{[^}]*"address":\s*"([^"]+)"/
        ? $1 : () } split /\n/, $r->{out} ];
}
ok(wait_until(sub { @{ queue() } == 4 }, 10), 'four messages deferred');
is_deeply([sort @{ queue() }], [map { "bob\@$_.example" }
    qw(none nosmtp otherkey wrongsk)], 'the queue holds every failing one')
    or diag(join ' ', @{ queue() });
my $q = run_cmd(['postqueue', '-c', $src->{etc}, '-p'])->{out};
like($q, qr/client TLS configuration problem/,
    'deferred for the policy lookup') or diag($q);

# Publishing the missing carrier in the KeyCache releases the "none" mail.
$r = sk('publish', '-a', "$dir/good.pem", '--cache', $cache);
is($r->{rc}, 0, 'sk publish the carrier') or diag($r->{err});
($rc, $v, $e) = pq("[mx.dest.example]:$port{none}");
is($v, "fingerprint match=$fp", 'carrier from the KeyCache: fingerprint')
    or diag($e);
run_cmd(['postqueue', '-c', $src->{etc}, '-f']);
ok($dst->wait_messages(3, 20), 'the deferred mail is delivered after the fix')
    or diag($src->log);
ok(wait_until(sub { @{ queue() } == 3 }, 10), 'three still deferred');

# The pin is enforced by Postfix: the good listener now serves another
# key (with a valid carrier of its own); while the pinned answer is
# cached, Postfix refuses that key and defers.
spew("$dir/chain-good.pem", slurp($okey) . slurp($ocrt) . $other, 0600);
$r = $dst->postfix('reload');
sleep 1;
$r = send_to('bob@good.example', 'to good, new key');
ok(wait_until(sub { $src->log =~
    /to=<bob\@good\.example>.*status=deferred \(([^\n]*)/ }, 15),
    'another key than the pinned one: deferred') or diag($src->log);
($why) = $src->log =~ /to=<bob\@good\.example>.*status=deferred \(([^\n]*)/;
like($why // '', qr/Server certificate not verified/,
    'Postfix refused the unpinned key');
ok((grep { $_ eq 'bob@good.example' } @{ queue() }), 'and kept the mail');

# SIGHUP empties the answer cache: the new key (it has a valid carrier of
# its own) is verified and pinned in turn.
kill 'HUP', $mpid;
ok(wait_until(sub { slurp($log) =~ /reloaded/ }), 'SIGHUP reload');
my $ospki = run_cmd(['sh', '-c', "openssl x509 -in $ocrt -pubkey -noout"
    . " | openssl pkey -pubin -outform DER"])->{out};
(my $ofp = sha256_hex($ospki)) =~ s/(..)(?!$)/$1:/g;
($rc, $v, $e) = pq("[mx.dest.example]:$port{good}");
is($v, "fingerprint match=$ofp", 'after SIGHUP: the new key is pinned')
    or diag($e . slurp($log));
is(scalar($dst->messages), 3, 'nothing delivered to the unpinned key');

# Strict netstrings: garbage closes the connection; the server lives on.
sub raw {
    my ($bytes) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$pport",
        Timeout => 5) or return "connect: $!";
    print $s $bytes;
    shutdown($s, 1);
    local $/;
    my $out = <$s> // '';
    close $s;
    return $out;
}
is(raw("5:sk x,"), '', 'short netstring: no answer');
is(raw("hello\r\n"), '', 'not a netstring: closed');
is(raw("00:,"), '', 'leading zero: closed');
is(raw("99999999:"), '', 'over-long length: closed');
is(raw("4:sk x;"), '', 'bad terminator: closed');
is(raw("2:sk,"), '', 'no key: closed');
is(raw("4:sk \x01,"), '', 'control character: closed');
is(raw('1025:sk ' . ('a' x 1022) . ','), '', 'request over 1024 bytes: closed');
my $perm = 'PERM unknown map name "xx" (PolicyMapName is "sk")';
is(raw("4:xx a,"), length($perm) . ":$perm,", 'unknown map name: PERM');
my $two = raw("14:sk [127.0.0.1],14:sk [127.0.0.1],");
is($two, "9:NOTFOUND ,9:NOTFOUND ,", 'two pipelined requests, two replies');
like(slurp($log), qr/malformed request \(netstring too long\): closing/,
    'garbage peer logged');
ok(daemon_alive($mpid), 'sk-milter still running');
($rc, $v, $e) = pq("[mx.dest.example]:$port{none}");
is($v, "fingerprint match=$fp", 'and still answering');

is(stop_daemon($mpid), 0, 'clean exit');
$src->stop;
$dst->stop;
run_cmd(['umount', $_]) for '/etc/hosts', '/etc/resolv.conf';
done_testing();
