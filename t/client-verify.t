#!/usr/bin/perl

# client-verify.t -- `sk verify` end to end on loopback: three real
# sk-timelines hold example.com's Bind (https, smtp, smtps), a real sk-mirror
# serves signed answers, nginx with ngx_sk_module serves the chain.
#   accept    the carrier made by the SK in force
#   reject    a carrier made by another SK, or none, with the reason
#   none      a name no timeline knows (exit 3)
#   accept    also from Postfix over STARTTLS and SMTPS (if installed)
#   insecure  http:// for a name whose SK covers https, and smtp without
#             STARTTLS for one whose SK covers smtp (exit 4)
#   the cache answers within T1 with no mirror; a mirror signing with
#   another key, or leaving out an entry the client holds, is dropped and
#   the next one asked; an Unbind reaches the client with the next answer.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;

use SKTest;
use NginxTest;
use SKTimeline;
use SKMirror;
use SKLiar ();
use SKPostfix ();

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl'
    unless has_cmd('openssl') && has_cmd('curl');

my ($ngx, $d, $port) = NginxTest->setup;

# The SK of example.com, backed by a certificate from the timelines' CA;
# an impostor's SK for the same name.
my $op = ed25519_key($d, 'operator');
my $tlca = SKTimeline::make_ca($d, 'tlca');
my $skkey = ed25519_key($d, 'example');
my $skcert = issue($d, $tlca, $skkey, 'example.com', "$d/example-sk");
my $evil = ed25519_key($d, 'evil');

my (%t, @tl);
for my $tid (7, 8, 9) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens")
        or BAIL_OUT(slurp($t{$tid}{log}));
    push @tl, [$tid, $t{$tid}{url}, "$d/tl$tid/timeline.pub",
        "sk-timeline-$tid"];
}

sub reg_all {
    my ($entry, $what) = @_;
    for my $tid (7, 8, 9) {
        my $r = append($t{$tid}, $entry);
        is($r->{code}, 201, "timeline $tid: $what") or diag($r->{body});
    }
}

reg_all(root_entry(cert => "$tlca.crt", key => $op), 'trusts the CA');
reg_all(bind_entry(name => 'example.com', key => $skkey,
    services => 'https,smtp,smtps', chain => [$skcert]), 'Bind example.com');

my $m = start_mirror("$d/m", \@tl);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
my %keys = map { $_->[0] => [$_->[2], $_->[3]] } @tl;

sub entries_seen {
    my ($name) = @_;
    my $r = query($m, $name);
    my $a = check_answer($r->{body}, $m->{pub}, \%keys, $name);
    return 0 unless $r->{code} == 200 && $a->{ok};
    return scalar grep { @{$a->{timelines}{$_}{entries} // []} } 7, 8, 9;
}
ok(wait_until(sub { entries_seen('example.com') == 3 }, 20),
    'the mirror serves the Bind from all three timelines')
    or diag(slurp($m->{log}));

# The trust file: the three timelines and the mirror; t1 = 0 so every run
# asks the mirror (the cache test below uses the default).
my $trust = "$d/trust.conf";
spew($trust, join('', map { "timeline = $_->[0] $_->[2]\n" } @tl)
    . "mirror = $m->{url} $m->{pub}\nt1 = 0\n");

# nginx: the right carrier, an impostor's carrier, no carrier, plain http.
NginxTest::make_ca($d);
my ($cert, $certkey) = make_cert($d, 'example.com', 'ec');
my $carrier = make_carrier($skkey, $cert, 'example.com', "$d/carrier.pem",
    '-s', 'https,smtp,smtps');
my $evilc = make_carrier($evil, $cert, 'example.com', "$d/evil.pem");
my ($p_evil, $p_none, $p_http) = map { $ngx->port($_) } qw(evil none http);
$ngx->write_conf(<<"EOF");
    ssl_certificate $cert;
    ssl_certificate_key $certkey;
    server {
        listen 127.0.0.1:$port ssl;
        server_name example.com;
        sovereign_key_public $d/example.pub;
        sovereign_key_carrier $carrier;
        location / { }
    }
    server {
        listen 127.0.0.1:$p_evil ssl;
        server_name example.com;
        sovereign_key_public $d/evil.pub;
        sovereign_key_carrier $evilc;
        location / { }
    }
    server {
        listen 127.0.0.1:$p_none ssl;
        server_name example.com;
        location / { }
    }
    server {
        listen 127.0.0.1:$p_http;
        server_name example.com;
        location / { }
    }
EOF
my $r = $ngx->test_conf;
is($r->{rc}, 0, 'nginx -t accepts the configuration') or diag($r->{err});
$ngx->start;

my $cache = "$d/cache";
sub verify {
    my ($url, $p, @more) = @_;
    return sk('verify', '--trust', $trust, '--cache', $cache,
        '--connect', "127.0.0.1:$p", @more, $url);
}

$r = verify("https://example.com:$port", $port);
is($r->{rc}, 0, 'accept: the carrier of the SK in force') or diag($r->{err});
like($r->{out}, qr/^accept: https:\/\/example\.com:$port: carrier for example\.com by the SK in force \(sha256:[0-9a-f]{64}\) certifies the server's key for https/,
    '... saying why') or diag($r->{out});
like($r->{out}, qr/record of example\.com: 3 entries, answer \(\Q$m->{url}\E\), 3 of 3 timelines fresh/,
    '... and where the record came from') or diag($r->{out});
like($r->{err}, qr/^sk: mirror \Q$m->{url}\E: fresh: 3 of 3/m,
    '... with the mirror asked');

$r = verify("https://example.com:$port", $port, '--json');
my $j = eval { decode_json($r->{out}) } // {};
is($j->{decision}, 'accept', 'json: decision');
is($j->{check}, 'carrier', 'json: check');
is($j->{entries}, 3, 'json: entries');
is($j->{freshness}, 'answer', 'json: freshness');
ok($j->{tls} && $j->{chain_length} >= 3, 'json: the chain');
like($j->{sk} // '', qr/^sha256:[0-9a-f]{64}$/, 'json: the SK');

# The routes sk fetch would try: the URL's host, then (the Bind lists no
# routes) the Ed25519 SK's own onion, through Tor.
my $own = onion_of($skkey);
$r = verify("https://example.com:$port", $port, '--routes', '--tor',
    '127.0.0.1:9999');
is($r->{rc}, 0, '--routes: still the decision') or diag($r->{err});
like($r->{out}, qr/^  routes, in order: example\.com:$port \(the URL's host\)\n    then \Q$own\E:$port \(the SK's own onion, through Tor at 127\.0\.0\.1:9999\)\n\z/m,
    '... the URL\'s host, then the SK\'s own onion through --tor')
    or diag($r->{out});
$r = verify("https://example.com:$port", $port, '--routes', '--json');
$j = eval { decode_json($r->{out}) } // {};
is_deeply($j->{routes}, [
        { route => "example.com:$port", kind => 'primary', via => 'direct' },
        { route => "$own:$port", kind => 'sk-onion',
          via => '127.0.0.1:9050' } ],
    '... in JSON, Tor at 127.0.0.1:9050 by default') or diag($r->{out});
$r = verify("https://example.com:$port", $port, '--routes', '--tor',
    'localhost:9050');
is($r->{rc}, 2, '--tor wants a numeric address');

$r = verify("https://example.com:$p_evil", $p_evil);
is($r->{rc}, 1, 'reject: a carrier made by another SK');
like($r->{out}, qr/^reject: .*example\.com has an SK \(sha256:[0-9a-f]{64}\) for https: carrier for example\.com: made for SK sha256:[0-9a-f]{64}, not sha256:/,
    '... the reason names both SKs') or diag($r->{out});
$r = verify("https://example.com:$p_evil", $p_evil, '--json');
is((eval { decode_json($r->{out}) } // {})->{check}, 'wrong-sk',
    '... json check wrong-sk');

$r = verify("https://example.com:$p_none", $p_none);
is($r->{rc}, 1, 'reject: no carrier in the chain');
like($r->{out}, qr/^reject: .*the server presented no carrier/,
    '... saying so') or diag($r->{out});

$r = verify("http://example.com:$p_http", $p_http);
is($r->{rc}, 4, 'insecure: http:// for a name whose SK covers https');
like($r->{out}, qr/^insecure: .*must not be used without TLS; http \(no TLS\) is offered/,
    '... saying why') or diag($r->{out});

# An SMTP server that offers no STARTTLS (the SK covers smtp).
my $p_smtp = free_port();
my $smtp = run_daemon(['perl', '-MIO::Socket::INET', '-e', <<'EOF', $p_smtp],
my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => $ARGV[0], Listen => 8, ReuseAddr => 1) or die $!;
while (my $c = $s->accept) {
    print $c "220 mail.example.com ESMTP\r\n";
    while (my $l = <$c>) {
        if ($l =~ /^EHLO/i) { print $c "250-mail.example.com\r\n250 8BITMIME\r\n" }
        elsif ($l =~ /^QUIT/i) { print $c "221 bye\r\n"; last }
        else { print $c "502 no\r\n" }
    }
    close $c;
}
EOF
    "$d/smtp.log");
ok(wait_for_port($p_smtp), 'plaintext SMTP server listens');
$r = verify("smtp://example.com:$p_smtp", $p_smtp);
is($r->{rc}, 4, 'insecure: smtp without STARTTLS for an SK covering smtp');
like($r->{out}, qr/^insecure: .*for smtp: .*does not offer STARTTLS/,
    '... saying why') or diag($r->{out});
stop_daemon($smtp);

# Postfix serving the carrier: SMTP with STARTTLS, and SMTPS.
SKIP: {
    skip 'postfix is not installed', 4
        unless has_cmd('postfix') && getpwnam('postfix');
    my $pfdir = "$d/pf";
    mkdir $pfdir;
    spew("$pfdir/chain.pem", slurp($certkey) . slurp($cert)
        . slurp($carrier), 0600);
    my $pf = SKPostfix->new(dir => $pfdir, chain => "$pfdir/chain.pem")
        ->start;
    $r = verify("smtp://example.com:$pf->{smtp}", $pf->{smtp});
    is($r->{rc}, 0, 'accept: Postfix with the carrier, over STARTTLS')
        or diag($r->{out} . $r->{err});
    like($r->{out}, qr/^accept: smtp:.*certifies the server's key for smtp,/,
        '... for smtp');
    $r = verify("smtps://example.com:$pf->{smtps}", $pf->{smtps});
    is($r->{rc}, 0, 'accept: Postfix with the carrier, over SMTPS')
        or diag($r->{out} . $r->{err});
    like($r->{out}, qr/^accept: smtps:.*for smtps,/, '... for smtps');
    $pf->stop;
}

$r = verify("https://unknown.example:$p_none", $p_none);
is($r->{rc}, 3, 'none: a name no timeline knows');
like($r->{out}, qr/^none: .*no SK is known for unknown\.example/,
    '... saying so') or diag($r->{out});

# The cache: within T1 the client needs no mirror at all.
my $trust2 = "$d/trust-cached.conf";
spew($trust2, join('', map { "timeline = $_->[0] $_->[2]\n" } @tl)
    . "mirror = http://127.0.0.1:" . free_port() . " $m->{pub}\n");
$r = sk('verify', '--trust', $trust2, '--cache', $cache, '--connect',
    "127.0.0.1:$port", "https://example.com:$port");
is($r->{rc}, 0, 'accept from the cache, mirror unreachable')
    or diag($r->{out} . $r->{err});
like($r->{out}, qr/3 entries, cached \(cache\)/, '... cached');

# A mirror answer checked against another mirror key: its signature over
# the query's nonce fails, which is refused like an answer replayed on the
# path (anyone there can send one: the mirror is not dropped for it).
# With a cache copy of earlier answers (within T2) the cached SK is still
# enforced; with nothing known at all, the client fails closed: no answer
# is no evidence that the system is broken.
my $cache3 = "$d/cache3";
run_cmd(['cp', '-a', $cache, $cache3]);
my @evilm = ('--trust', $trust, '--mirror', $m->{url}, '--mirror-key',
    "$d/evil.pub", '--connect', "127.0.0.1:$p_none",
    "https://example.com:$p_none");
$r = sk('verify', '--cache', $cache3, @evilm);
like($r->{err}, qr/mirror \Q$m->{url}\E: refused: not an answer to this query \(nonce: the mirror's Nonce-Signature does not verify/,
    'a mirror signing with another key is refused, saying why')
    or diag($r->{err});
is($r->{rc}, 1, '... the cached SK still rejects a chain without carrier');
like($r->{out}, qr/3 entries, cached \(cache\)/, '... from the cache')
    or diag($r->{out});
$r = sk('verify', '--cache', $cache3, @evilm);
like($r->{err}, qr/mirror \Q$m->{url}\E: refused: not an answer/,
    '... and asked again next time: refusing is not dropping');
$r = sk('verify', '--cache', "$d/cache4", '--json', @evilm);
$j = eval { decode_json($r->{out}) } // {};
is($r->{rc}, 5, 'nothing known and no mirror left: undecided');
is($j->{freshness}, 'fail-closed', '... failing closed: silence is no '
    . 'evidence of a broken system');
like($j->{reason}, qr/no mirror gave a fresh enough answer for example\.com \(0 of 3 timelines fresh: nothing answered, no staple, nothing cached\)/,
    '... saying so') or diag($r->{out});

# A mirror that leaves out an entry the client holds: a copy of the real
# answer without timeline 8's Bind, signed with that mirror's own key.
# The client drops it and takes the next mirror's answer.
my $fake = ed25519_key($d, 'fakemirror');
my $ans = SKLiar::parse(query($m, 'example.com')->{body});
my ($b8) = grep { $_->{tid} == 8 } @{$ans->{blocks}};
ok($b8 && @{$b8->{entries}} == 1, 'the real answer has timeline 8\'s Bind');
$b8->{entries} = [];
my $forged = SKLiar::build($ans, $fake);
mkdir "$d/fm";
mkdir "$d/fm/www";
spew("$d/fm/www/%query%example.com", $forged);
# It signs each query's nonce too: what it omits is its own doing.
run_cmd(['cp', "$d/fakemirror.key", "$d/fm/nonce.key"]);
my $fm = serve_forged("$d/fm");
run_cmd(['cp', '-a', $cache, "$d/cache5"]);
$r = sk('verify', '--trust', $trust, '--cache', "$d/cache5", '--mirror',
    $fm->{url}, '--mirror-key', "$d/fakemirror.pub", '--mirror', $m->{url},
    '--connect', "127.0.0.1:$port", "https://example.com:$port");
# (Timeline 8's map proof shows it first when its checkpoint ends in a
# Map-Root entry; the cache, when not.)
like($r->{err}, qr/mirror \Q$fm->{url}\E: dropped: (?:omits timeline 8 SN 1 for example\.com|answer: timeline 8: map proof: )/,
    'a mirror omitting a cached entry is dropped') or diag($r->{err});
is($r->{rc}, 0, '... and the next mirror decides: accept')
    or diag($r->{out});
like($r->{out}, qr/answer \(\Q$m->{url}\E\)/, '... from its answer');
stop_daemon($fm->{pid});

# Usage and local failures never look like a reject (exit 1).
$r = sk('verify', '--trust', $trust, "https://127.0.0.1:$port");
is($r->{rc}, 2, 'an address for a host: usage error');
like($r->{err}, qr/the host must be a DNS name/, '... saying so');
$r = sk('verify', '--trust', "$d/no-such.conf", "https://example.com:$port");
is($r->{rc}, 5, 'no trust file: undecided, not reject');
$r = sk('verify', '--trust', $trust, "ftp://example.com");
is($r->{rc}, 2, 'an unknown scheme: usage error');

# Revocation: an Unbind on every timeline; the next answer carries it.
reg_all(unbind_entry(name => 'example.com', key => $skkey),
    'Unbind example.com');
ok(wait_until(sub {
        verify("https://example.com:$p_none", $p_none)->{rc} == 3 }, 20),
    'after the Unbind: no SK in force (none)');
$r = verify("https://example.com:$p_none", $p_none);
like($r->{out}, qr/^none: .*the SK of example\.com was revoked/,
    '... saying it was revoked') or diag($r->{out});

is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_daemon($m->{pid});
stop_daemon($t{$_}{pid}) for 7, 8, 9;
done_testing();
