#!/usr/bin/perl

# client-decisions.t -- docs/protocol.md's decision table, row by row,
# through every entry point: sk verify, sk fetch, sk proxy (curl through
# it), and the C API (sk/tls.h: sk_tls_lookup, sk_tls_prepare,
# sk_tls_decide, in tests/unit/tls_drive.c),
# and sk-milter's outbound policy (StapleTrust).
# The table is read from the document: a changed cell fails here.
#
# One set of real daemons for the whole table: three sk-timelines binding
# example.com, other.example and smtponly.example (and gone.example, then
# Unbound; and revoked.example, its answer taken, then Unbound and Rebound
# to a new SK), an sk-mirror, nginx with ngx_sk_module as every server (the
# real site, an impostor, another SK's carrier, a name without SK, broken
# carriers, plain HTTP; staples in the certificate form in the chain
# file), one Postfix serving the same chains over STARTTLS for the policy
# (one listener each; skipped where Postfix or a private /etc/hosts is not
# to be had), small HTTP servers serving a mirror answer (current, stale,
# from before an Unbind) or a lying one, signing the client's nonce with
# sk-mirror's key as a mirror that lags would, replaying sk-mirror's
# answers from before an Unbind and a Bind and for another nonce as the
# path would (no nonce signed), a lying mirror hiding the name
# (t/lib/SKLiar.pm), and a mirror reached only through its onion (a SOCKS5
# stand-in for Tor; its direct URL a listener that never answers).  Per
# row: the
# trust file (which mirror, which timelines, max_derelict, T1-T4,
# fail_open), the
# cache (emptied, or the copy taken at set-up, intact or damaged) and the
# server's port (http:// for plain).
# Whether the HTTP request reached the server: its access log.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256_hex);
use JSON::PP;
use MIME::Base64 ();
use Test::More;
use Time::HiRes qw(sleep time);

use SKTest;
use NginxTest;
use SKSite;
use SKPostfix qw(private_hosts_reexec private_hosts);
use SKTimeline ();
use SKMirror ();
use SKLiar ();
use SKTorNet qw(fake_socks);
use IO::Socket::INET;

# The policy looks the next hop's name up: a private /etc/hosts.
my $nopolicy = private_hosts_reexec();
my $DRIVE = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/tests/tls_drive';
my ($ngx, $d) = NginxTest->setup;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => "no $DRIVE" unless -x $DRIVE;
my $SKM = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
$nopolicy //= !-x $SKM ? "no $SKM"
    : !has_cmd('postfix') || !has_cmd('postmap') ? 'no postfix'
    : private_hosts($d, 'example.com', 'www.example.com', 'nosk.test',
        'gone.example', 'smtponly.example', 'revoked.example',
        'late.example');

# The table.
my $doc = slurp("$SKTest::ROOT/docs/protocol.md");
my ($sect) = $doc =~ /^### Decision table \(every entry point\)\n(.*?)^### /ms;
my @cols;
my @rows;
for my $l (split /\n/, $sect // '') {
    next unless $l =~ /^\|/;
    my @c = map { s/^\s+|\s+$//gr } split /\|/, substr($l, 1);
    if (!@cols) { @cols = @c; next }
    next if $c[0] =~ /^-+$/;
    my %r;
    @r{@cols} = @c;
    push @rows, \%r;
}
is_deeply(\@cols, ['row', 'cache', 'staple', 'mirror', 'trust', 'server',
    'decision', 'exit', 'fetch', 'request', 'no staple', 'policy', 'proxy'],
    'docs/protocol.md: the decision table\'s columns');
ok(@rows >= 20, 'docs/protocol.md: ' . scalar(@rows) . ' rows');

# The world: example.com (with its subdomains), other.example and
# smtponly.example (smtp only) bound on timelines 7, 8, 9; gone.example
# bound, then Unbound.
my $w = world($d, names => { 'example.com' => 'https,smtp',
    'other.example' => 'https', 'smtponly.example' => 'smtp',
    'gone.example' => 'https' }, subdomains => ['example.com'],
    unbind => ['gone.example'],
    mirror => { query_cache => 0, onion_dir => "$d/m-onion" });
my $m = $w->{mirror};
my @tids = (7, 8, 9);
my $tlconf = sub {
    my ($n) = @_;
    return join('', map { "timeline = $_ $d/tl$_/timeline.pub\n" }
        @tids[0 .. $n - 1]);
};

# revoked.example: bound by one SK (other.example may rebind it), its
# answer taken, then Unbound and Rebound to a new SK on every timeline (a
# compromised key replaced).
my %tlkeys = map { $_ => ["$d/tl$_/timeline.pub", "sk-timeline-$_"] } @tids;
sub mirror_shows {
    my ($n, $want) = @_;
    return wait_until(sub {
        my $q = SKMirror::query($m, $n);
        my $ans = SKMirror::check_answer($q->{body}, $m->{pub}, \%tlkeys);
        return $q->{code} == 200 && $ans->{ok} && !grep {
            @{$ans->{timelines}{$_}{entries} // []} != $want } @tids;
    }, 30);
}
my ($rsk_old, $rsk_new) = map { SKTimeline::ed25519_key($d, "sk-revoked-$_") }
    'old', 'new';
sub to_timelines {
    for my $e (@_) {
        for my $tid (@tids) {
            my $a = SKTimeline::append($w->{timelines}{$tid}, $e);
            die "timeline $tid: $a->{code} $a->{body}" if $a->{code} != 201;
        }
    }
}
to_timelines(SKTimeline::bind_entry(name => 'revoked.example',
    key => $rsk_old, rebinders => 'other.example', chain => [
        SKTimeline::issue($d, $w->{tlca}, $rsk_old, 'revoked.example',
            "$d/ev-revoked-old")]));
ok(mirror_shows('revoked.example', 1), 'revoked.example bound');
my $before_unbind = SKMirror::query($m, 'revoked.example')->{body};
to_timelines(SKTimeline::unbind_entry(name => 'revoked.example',
    key => $rsk_old), SKTimeline::rebind_entry(name => 'revoked.example',
    key => $rsk_new, rebinder => 'other.example',
    rebinder_key => $w->{sk}{'other.example'}, chain => [
        SKTimeline::issue($d, $w->{tlca}, $rsk_new, 'revoked.example',
            "$d/ev-revoked-new")]));
ok(mirror_shows('revoked.example', 3), 'revoked.example Unbound, Rebound');

# Genuine answers of sk-mirror a path attacker kept: late.example's before
# its Bind ("no entries"), and example.com's to a query with another nonce
# (with revoked.example's before its Unbind, above).  Then late.example's
# Bind.
my $old_nonce = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8';
my $before_bind = SKMirror::query($m, 'late.example')->{body};
my $old_nonce_answer = SKTimeline::http('GET', "$m->{url}/query/example.com?"
    . "nonce=$old_nonce")->{body};
like($old_nonce_answer, qr/^Nonce: \Q$old_nonce\E\nNonce-Batch: 0 1\n/m,
    'sk-mirror signs the nonce of a query');
$w->{sk}{'late.example'} = SKTimeline::ed25519_key($d, 'sk-late.example');
to_timelines(SKTimeline::bind_entry(name => 'late.example',
    key => $w->{sk}{'late.example'}, chain => [SKTimeline::issue($d,
        "$d/tlca", $w->{sk}{'late.example'}, 'late.example',
        "$d/ev-late.example")]));
ok(mirror_shows('late.example', 1), 'late.example bound');

# Staples: fresh, and the refused kinds.
my $r;
for my $n ('example.com', 'other.example', 'www.example.com') {
    $r = sk('staple', 'fetch', '--trust', $w->{trust}, '-o', "$d/$n.staple",
        $n);
    is($r->{rc}, 0, "sk staple fetch $n") or diag($r->{out} . $r->{err});
}
my $good = slurp("$d/example.com.staple");
my $bs = bad_staples($d, $good);
my %staple = (none => undef, fresh => $good, stale => $good,
    tampered => $bs->{tampered},
    'other-name' => slurp("$d/other.example.staple"),
    untrusted => $bs->{untrusted},
    'www-fresh' => slurp("$d/www.example.com.staple"));

# Mirrors: the real one, a closed port, an answer taken now (current; and
# stale by the row's T2 of 1 s), a lying one (a checkpoint changed), and
# the answer from before revoked.example's Unbind (stale by T2 too); these
# sign the client's nonce with sk-mirror's key: mirrors that lag or go
# wrong, what they send is their own.  Replays on the path, which cannot
# sign a nonce: the answers kept above, served for any nonce.
# Each is the trust file's mirror lines: URL and key (and onion).
my %mirror = (answers => [[$m->{url}, $m->{pub}]],
    down => [['http://127.0.0.1:' . free_port(), $m->{pub}]]);
my $now_answer = SKMirror::query($m, 'example.com')->{body};
my $forged = sub {
    my ($k, $name, $body, $signs) = @_;
    mkdir "$d/fm-$k";
    mkdir "$d/fm-$k/www";
    spew("$d/fm-$k/www/%query%$name", $body);
    run_cmd(['cp', "$m->{dir}/data/mirror.key", "$d/fm-$k/nonce.key"])
        if $signs;
    return [SKMirror::serve_forged("$d/fm-$k")->{url}, $m->{pub}];
};
for my $k ('stale', 'lying', 'replay') {
    my $body = $now_answer;
    # (the first checkpoint note's Timestamp extension line)
    $body =~ s/^(Timestamp \d*)(\d)$/$1 . (($2 + 1) % 10)/me
        or die 'no Timestamp line to change' if $k eq 'lying';
    $mirror{$k} = [$forged->($k, 'example.com', $body, 1)];
}
$mirror{'unbind-stale'} = [$forged->('unbind-stale', 'revoked.example',
    $before_unbind, 1)];
# A mirror that answers for www.example.com (an answer taken now, signed
# for the nonce) and not for its parent, example.com, whose SK covers it.
$mirror{'parent-down'} = [$forged->('parent', 'www.example.com',
    SKMirror::query($m, 'www.example.com')->{body}, 1)];
$mirror{'replay-unbind'} = [$forged->('r-unbind', 'revoked.example',
    $before_unbind, 0)];
$mirror{'replay-bind'} = [$forged->('r-bind', 'late.example', $before_bind,
    0)];
$mirror{'replay-own'} = [@{$mirror{'replay-bind'}}, @{$mirror{answers}}];
$mirror{'nonce-mismatch'} = [$forged->('r-nonce', 'example.com',
    $old_nonce_answer, 0)];
# The onion path: the direct URL a listener that takes connections and
# never answers (a blocked path times out, it is not refused), the onion
# sk-mirror's own (onion_dir) through a SOCKS5 stand-in for Tor
# (t/mirror-onion-tor.t does it on a private Tor network).
my $blackhole = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => 0, Listen => 128) or die "blackhole: $!";
chomp(my $mirror_onion = slurp("$d/m-onion/hostname"));
like(slurp("$d/m-onion.torrc"), qr/^HiddenServicePort 80 127\.0\.0\.1:\Q$m->{port}\E$/m,
    "sk-mirror's onion service: $mirror_onion, port 80 to its listener");
my $socks = fake_socks("$d/socks.log", { "$mirror_onion:80" => $m->{port} });
$mirror{onion} = [['http://127.0.0.1:' . $blackhole->sockport, $m->{pub},
    "onion=$mirror_onion"]];
# A lying mirror with a key of its own, in front of sk-mirror: it leaves
# every entry of the name out and signs that; alone, or then sk-mirror.
my $liar = SKLiar::start("$d/liar", $m->{url});
SKLiar::lie($liar, 'absent');
$mirror{'map-liar'} = [[$liar->{url}, $liar->{pub}]];
$mirror{'map-lie'} = [@{$mirror{'map-liar'}}, @{$mirror{answers}}];

# The servers: one nginx port per (server, staple) the table uses.
my $ca = NginxTest::make_ca($d);
my ($cert, $key) = make_cert($d, 'example.com', 'ec');
my ($icert, $ikey) = make_cert($d, 'example.com', 'rsa');
my ($ncert, $nkey) = make_cert($d, 'nosk.test', 'ec');
my ($wcert, $wkey) = make_cert($d, 'www.example.com', 'rsa');
my ($gcert, $gkey) = make_cert($d, 'gone.example', 'ec');
my ($scert, $skey) = make_cert($d, 'smtponly.example', 'ec');
my ($rcert, $rkey) = make_cert($d, 'revoked.example', 'ec');
my ($lcert, $lkey) = make_cert($d, 'late.example', 'rsa');
(my $skpub = $w->{sk}{'example.com'}) =~ s/\.key$/.pub/;
(my $opub = $w->{sk}{'other.example'}) =~ s/\.key$/.pub/;
make_carrier($w->{sk}{'example.com'}, $cert, 'example.com', "$d/c-real.pem",
    '-s', 'https,smtp');
make_carrier($w->{sk}{'other.example'}, $cert, 'example.com',
    "$d/c-other.pem", '-s', 'https,smtp');
# example.com's SK's carriers of the real key: for another name, without
# https, expired; and c-real.pem with its extension's version 2 (OpenSSL
# still reads the certificate; sk_carrier_from_der refuses it).
make_carrier($w->{sk}{'example.com'}, $cert, 'other.example',
    "$d/c-name.pem", '-s', 'https,smtp');
make_carrier($w->{sk}{'example.com'}, $cert, 'example.com',
    "$d/c-services.pem", '-s', 'smtp');
expired_carrier($w->{sk}{'example.com'}, $cert, 'example.com',
    "$d/c-expired.pem", 'https,smtp');
# revoked.example's first SK (Unbound, replaced) certifies the server.
make_carrier($rsk_old, $rcert, 'revoked.example', "$d/c-revoked.pem", '-s',
    'https');
(my $rpub = $rsk_old) =~ s/\.key$/.pub/;
{
    my ($b64) = slurp("$d/c-real.pem")
        =~ /-----BEGIN CERTIFICATE-----\n(.*?)-----END/s;
    my $der = MIME::Base64::decode_base64($b64);
    $der =~ s/\x02\x01\x01\x04\x20/\x02\x01\x02\x04\x20/ == 1
        or die 'no carrier extension to damage';
    spew("$d/c-malformed.pem", "-----BEGIN CERTIFICATE-----\n"
        . MIME::Base64::encode_base64($der) . "-----END CERTIFICATE-----\n");
}
# name, certificate, key, nginx's carrier directives, the carrier file
# (served in the chain file when nginx does not load it: nginx -t refuses
# an expired carrier), and for plain: nginx and Postfix without TLS.
my %server = (
    real       => ['example.com', $cert, $key,
        "sovereign_key_public $skpub;\n"
        . "        sovereign_key_carrier $d/c-real.pem;\n", "$d/c-real.pem"],
    'other-sk' => ['example.com', $cert, $key,
        "sovereign_key_public $opub;\n"
        . "        sovereign_key_carrier $d/c-other.pem;\n", "$d/c-other.pem"],
    impostor   => ['example.com', $icert, $ikey, ''],
    'no-sk'    => ['nosk.test', $ncert, $nkey, ''],
    'www-impostor' => ['www.example.com', $wcert, $wkey, ''],
    plain      => ['example.com', $cert, $key, '', undef, 'plain'],
    unbound    => ['gone.example', $gcert, $gkey, ''],
    'smtp-only' => ['smtponly.example', $scert, $skey, ''],
    malformed  => ['example.com', $cert, $key, '', "$d/c-malformed.pem"],
    'carrier-name' => ['example.com', $cert, $key,
        "sovereign_key_public $skpub;\n"
        . "        sovereign_key_carrier $d/c-name.pem;\n", "$d/c-name.pem"],
    'carrier-services' => ['example.com', $cert, $key,
        "sovereign_key_public $skpub;\n"
        . "        sovereign_key_carrier $d/c-services.pem;\n",
        "$d/c-services.pem"],
    expired    => ['example.com', $cert, $key, '', "$d/c-expired.pem"],
    revoked    => ['revoked.example', $rcert, $rkey,
        "sovereign_key_public $rpub;\n"
        . "        sovereign_key_carrier $d/c-revoked.pem;\n",
        "$d/c-revoked.pem"],
    'late-impostor' => ['late.example', $lcert, $lkey, ''],
);
my (%port, %smtp, $conf);
my $pf;
if (!$nopolicy) {
    mkdir "$d/pf";
    $pf = SKPostfix->new(dir => "$d/pf");
}
for my $row (@rows) {
    my $k = "$row->{server}/$row->{staple}";
    next if $port{$k};
    my ($name, $c, $ck, $extra, $carrier, $plain) = @{$server{$row->{server}}
        // die "row $row->{row}: unknown server $row->{server}"};
    die "row $row->{row}: unknown staple $row->{staple}"
        unless exists $staple{$row->{staple}};
    (my $tag = $k) =~ s{/}{-}g;
    # (the first takes the port NginxTest->setup made)
    my $p = $port{$k} = $ngx->port(%port ? $tag : 'default');
    my $chain = "$d/chain-$tag.pem";
    my $bytes = $staple{$row->{staple}};
    if (defined $bytes) {
        spew("$d/st-$tag.bin", $bytes);
        $r = sk('staple', 'wrap', '-i', "$d/st-$tag.bin", '-o',
            "$d/st-$tag.pem");
        die "sk staple wrap: $r->{err}" if $r->{rc};
    }
    my $st = defined $bytes ? slurp("$d/st-$tag.pem") : '';
    spew($chain, slurp($c) . ($carrier && !$extra ? slurp($carrier) : '')
        . $st);
    if ($pf && $plain) {
        # Postfix: no STARTTLS.
        my $sp = $smtp{$k} = free_port();
        $pf->postconf('-M', "127.0.0.1:$sp/inet=127.0.0.1:$sp inet n - n - "
            . "- smtpd -o smtpd_tls_security_level=none");
    } elsif ($pf) {
        # Postfix: key, certificates, carrier, staple in one file.
        spew("$d/pf-$tag.pem", slurp($ck) . slurp($c)
            . ($carrier ? slurp($carrier) : '') . $st, 0600);
        my $sp = $smtp{$k} = free_port();
        $pf->postconf('-M', "127.0.0.1:$sp/inet=127.0.0.1:$sp inet n - n - "
            . "- smtpd -o smtpd_tls_chain_files=$d/pf-$tag.pem");
    }
    mkdir "$d/www-$tag";
    spew("$d/www-$tag/index.html", "$tag\n");
    $conf .= "    server {\n        listen 127.0.0.1:$p" . ($plain ? '' : ' ssl')
        . ";\n        server_name $name;\n        root $d/www-$tag;\n"
        . "        access_log $d/access-$p.log;\n"
        . ($plain ? '' : "        ssl_certificate $chain;\n"
            . "        ssl_certificate_key $ck;\n        $extra")
        . "    }\n";
}
$ngx->write_conf($conf);
$r = $ngx->test_conf;
is($r->{rc}, 0, 'nginx -t accepts the servers') or diag($r->{err});
$ngx->start;
$pf->start if $pf;
my $spki = run_cmd(['sh', '-c', "openssl x509 -in $cert -pubkey -noout"
    . " | openssl pkey -pubin -outform DER"])->{out};
(my $fp = sha256_hex($spki)) =~ s/(..)(?!$)/$1:/g;

# sk-milter's answer for the next hop [NAME]:PORT, StapleTrust TRUST and
# PolicyCache CACHE (a copy of the row's): match (the real site's key),
# TEMP or NOTFOUND.  One milter; each row's trust file and cache are
# loaded by a reload (which empties the policy's answer cache).
my ($mlog, $mpid, $pport, $sport) = ("$d/milter.log");
my $ptrust = "$d/policy-trust.conf";
sub reloads { return -e $mlog ? scalar(() = slurp($mlog) =~ /reloaded /g) : 0 }
if ($pf) {
    mkdir "$d/kc";
    ($pport, $sport) = (free_port(), free_port());
    spew($ptrust, slurp($w->{trust}));
    milter_conf("$d/pc");
    $mpid = run_daemon([$SKM, '-f', '-c', "$d/sk-milter.conf"], $mlog);
    ok(wait_for_port($pport), 'sk-milter\'s policy socket listens')
        or diag(slurp($mlog));
}
sub milter_conf {
    my ($cache) = @_;
    spew("$d/sk-milter.conf", join('', map { "$_\n" }
        "Socket inet:$sport\@127.0.0.1",
        'Name mx.src.example', 'Syslog no', "KeyCache $d/kc",
        "PolicySocket inet:$pport\@127.0.0.1", "StapleTrust $ptrust",
        "PolicyCache $cache"));
}
sub policy {
    my ($trust, $name, $port, $cache) = @_;
    my $n = reloads();
    spew($ptrust, slurp($trust));
    milter_conf($cache);
    kill 'HUP', $mpid;
    wait_until(sub { reloads() > $n }, 10)
        or return 'not reloaded: ' . slurp($mlog);
    my $r = run_cmd(['postmap', '-c', $pf->{etc}, '-q', "[$name]:$port",
        "socketmap:inet:127.0.0.1:$pport:sk"]);
    chomp(my $v = $r->{out});
    return $v eq "fingerprint match=$fp" ? 'match'
        : $r->{err} =~ /temporary|TEMP|lookup error|problem/i ? 'TEMP'
        : $r->{rc} == 1 && $v eq '' ? 'NOTFOUND' : "$r->{rc} $v $r->{err}";
}

# The cache a row may start with: example.com's view, from the mirror;
# and that copy damaged (its first Timestamp line changed, in timeline 7's
# last entry: the view no longer verifies).
my $held = "$d/held";
$r = sk('verify', '--trust', $w->{trust}, '--cache', $held, '--no-staple',
    '--connect', "127.0.0.1:$port{'real/none'}",
    "https://example.com:$port{'real/none'}");
is($r->{rc}, 0, 'the held cache: example.com accepted from the mirror')
    or diag($r->{out} . $r->{err});
my $damaged = "$d/damaged";
run_cmd(['cp', '-a', $held, $damaged]);
{
    my $view = slurp("$damaged/names/example.com");
    $view =~ s/^(Timestamp: \d*)(\d)$/$1 . (($2 + 1) % 10)/me
        or die 'no Timestamp line in the held view';
    spew("$damaged/names/example.com", $view, 0600);
}
# Older than the 1 s of the stale rules (T2, staple_max_age, T4).
sleep 2;

sub requests {
    my ($p) = @_;
    my $f = "$d/access-$p.log";
    return -e $f ? scalar(() = slurp($f) =~ /"GET \//g) : 0;
}

my $dead_tor = free_port();
my %exit = (accept => 0, reject => 1, none => 3, insecure => 4,
    undecided => 5);

# `sk proxy` with the row's trust file and cache, one curl through it:
# page (the site's page, the sessions spliced), blind (the site's page
# through a blind tunnel), blocked, undecided (the proxy's pages),
# redirect (to https://).  Its local CA is made on the first run.
my $pca = "$d/proxy-ca";
sub proxy_get {
    my ($trust, $cache, $name, $p, $url, $onion) = @_;
    my $pp = free_port();
    my $log = "$d/proxy-$pp.log";
    my $pid = run_daemon([$SKTest::SK, 'proxy', '--listen', "127.0.0.1:$pp",
        '--trust', $trust, '--cache', $cache, '--cacert', $ca, '--ca-dir',
        $pca, $onion ? () : ('--tor', "127.0.0.1:$dead_tor"),
        '--connect-timeout', 3,
        '--resolve', "$name:$p:127.0.0.1"], $log);
    wait_for_port($pp, 10) or return 'no proxy: ' . slurp($log);
    spew("$d/proxy-cas.pem", slurp($ca) . slurp("$pca/ca.pem"));
    unlink "$d/pbody", "$d/phead";
    my $r = run_cmd(['curl', '-sS', '--max-time', 30, '-x',
        "http://127.0.0.1:$pp", '--cacert', "$d/proxy-cas.pem", '-D',
        "$d/phead", '-o', "$d/pbody", $url]);
    stop_daemon($pid);
    my $head = -e "$d/phead" ? slurp("$d/phead") : '';
    my ($dec) = $head =~ /^SK-Proxy-Decision: (\w+)/mi;
    my $said = slurp($log);
    return !defined $dec && $said =~ / -> spliced/ ? 'page'
        : !defined $dec && $said =~ / -> tunnelled blind/ ? 'blind'
        : ($dec // '') eq 'reject' ? 'blocked'
        : ($dec // '') eq 'insecure' ? 'redirect'
        : ($dec // '') eq 'undecided' ? 'undecided'
        : "curl exit $r->{rc}: $r->{err}; $said";
}
my $t0 = time;
my $ptime = 0;
for my $row (@rows) {
    my $id = $row->{row};
    # SK_ROWS=D45,D46: only those rows (while working on them).
    next if $ENV{SK_ROWS} && !grep { $_ eq $id } split /,/, $ENV{SK_ROWS};
    my ($name, $srv) = ($server{$row->{server}}[0],
        "$row->{server}/$row->{staple}");
    my $p = $port{$srv};
    my %tr = map { split /=/ } split ' ', $row->{trust};
    my $trust = "$d/trust-$id.conf";
    my $ms = $mirror{$row->{mirror}}
        // die "row $id: unknown mirror $row->{mirror}";
    my $onion = $row->{mirror} eq 'onion';
    spew($trust, $tlconf->($tr{tl})
        . join('', map { "mirror = @$_\n" } @$ms)
        . "max_derelict = $tr{md}\n"
        . join('', map { "$_ = $tr{$_}\n" } grep { /^t\d$/ } sort keys %tr)
        . ($tr{fo} ? "fail_open = $tr{fo}\n" : '')
        . ($row->{staple} eq 'stale' ? "staple_max_age = 1\n" : '')
        . ($row->{mirror} =~ /stale/ ? "t2 = 1\n" : '')
        . ($onion ? "tor = 127.0.0.1:$socks->{port}\nmirror_timeout = 1\n"
            : ''));
    my $cache = "$d/cache-$id";
    my $fresh_cache = sub {
        run_cmd(['rm', '-rf', $cache]);
        if ($row->{cache} eq 'held' || $row->{cache} eq 'damaged') {
            run_cmd(['cp', '-a', $row->{cache} eq 'held' ? $held : $damaged,
                $cache]);
        } elsif ($row->{cache} ne 'empty') {
            die "row $id: unknown cache $row->{cache}";
        }
    };
    my $what = "$id ($row->{cache} cache, $row->{staple} staple, "
        . "$row->{mirror} mirror, $row->{trust}, $row->{server})";
    my $plain = $server{$row->{server}}[5];
    my $url = ($plain ? 'http' : 'https') . "://$name:$p";

    # sk verify, the staple asked for, and --no-staple.
    for my $ns (0, 1) {
        $fresh_cache->();
        my $before = requests($p);
        $r = sk('verify', '--trust', $trust, '--cache', $cache, '--connect',
            "127.0.0.1:$p", ($ns ? '--no-staple' : ()), $url);
        my $want = $ns ? $row->{'no staple'} : $row->{decision};
        my ($got) = $r->{out} =~ /^(\w+): /;
        my $how = $ns ? 'sk verify --no-staple' : 'sk verify';
        is($got // '', $want, "$what: $how: $want")
            or diag($r->{out} . $r->{err});
        is($r->{rc}, $ns ? $exit{$want} : $row->{exit}, "$what: $how: exit");
        is(requests($p), $before, "$what: $how sends no request");
    }

    # sk fetch.
    $fresh_cache->();
    my $before = requests($p);
    $r = sk('fetch', '--trust', $trust, '--cache', $cache, '--cacert', $ca,
        $onion ? () : ('--tor', "127.0.0.1:$dead_tor"),
        '--connect-timeout', 3,
        '--resolve', "$name:$p:127.0.0.1", '-o', "$d/body", $url);
    is($r->{rc}, $row->{fetch}, "$what: sk fetch: exit $row->{fetch}")
        or diag($r->{out} . $r->{err});
    is(requests($p) > $before ? 'yes' : 'no', $row->{request},
        "$what: sk fetch: request sent: $row->{request}");

    # sk proxy, curl through it: what a browser would get.
    $fresh_cache->();
    $before = requests($p);
    my $pt0 = time;
    is(proxy_get($trust, $cache, $name, $p, $url, $onion), $row->{proxy},
        "$what: sk proxy: $row->{proxy}");
    $ptime += time - $pt0;
    is(requests($p) > $before ? 'yes' : 'no', $row->{request},
        "$what: sk proxy: request sent: $row->{request}");

    # The C API.
    for my $mode ('lookup', 'prepare', 'decide') {
        $fresh_cache->();
        $before = requests($p);
        $r = run_cmd([$DRIVE, $mode, $trust, $cache, $name, $p, '127.0.0.1',
            $ca, $plain ? 'plain' : ()]);
        my $want = $mode eq 'lookup' ? $row->{'no staple'}
            : $row->{decision};
        my $sent = $exit{$want} == 0 || $want eq 'none' ? 'yes' : 'no';
        my $fn = "sk_tls_$mode";
        is($r->{out}, "decision=$want sent=$sent\n", "$what: $fn: $want")
            or diag($r->{err});
        is($r->{rc}, $exit{$want}, "$what: $fn: exit $exit{$want}");
        is(requests($p) > $before ? 'yes' : 'no', $sent,
            "$what: $fn: request sent: $sent");
        is($sent, $row->{request}, "$what: $fn: the table's request")
            unless $mode eq 'lookup';
    }
    is($exit{$row->{decision}}, $row->{exit}, "$id: exit is the decision's");

    # sk-milter's outbound policy.
    SKIP: {
        skip "policy: $nopolicy", 1 if $nopolicy;
        $fresh_cache->();
        is(policy($trust, $name, $smtp{$srv}, $cache), $row->{policy},
            "$what: outbound policy: $row->{policy}")
            or diag(slurp($mlog));
    }
}
note(sprintf('%d rows in %.1f s (sk proxy: %.1f s)', scalar @rows,
    time - $t0, $ptime));

is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
if ($pf) {
    is(stop_daemon($mpid), 0, 'sk-milter: clean exit');
    $pf->stop;
}
stop_daemon($liar->{pid});
stop_daemon($socks->{pid});
stop_world($w);
done_testing();
