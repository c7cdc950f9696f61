package SKDNS;

# SKDNS -- a private DNSSEC hierarchy on loopback for the DNSSEC evidence
# tests: the zones tests/unit/dnssec_zones.sh signed (".", "test.",
# "example.test."), served by a real NSD, resolved through a real
# validating Unbound whose trust anchor is the private root's DS.
#
#   have_dns()               1 if nsd and unbound are installed
#   start_dns(DIR, ZONEDIR)  { nsd, unbound (pids), resolver ("IP:PORT"),
#                              up, log }
#   stop_dns(H)
#   start_zones(DIR, PORT, { ORIGIN => ZONE TEXT, ... })  an NSD serving
#                            those zones, unsigned, on 127.0.0.1:PORT:
#                            { nsd (pid), up, log, ... }; again with new
#                            texts (restart_zones(H, ZONES)) when a test
#                            changes a record
#
# Unbound's pitfalls (shared/design/test-recipes.md): "test." is one of
# its blocked zones (nodefault); stubs only, no root hints; it must be let
# query 127.0.0.1.  It rotates the RRs of each RRset it answers with
# (rrset-roundrobin), as resolvers commonly do.

use strict;
use warnings;

use Exporter 'import';
use SKTest;

our @EXPORT = qw(start_dns stop_dns have_dns start_zones restart_zones);

my @ZONES = (['.', 'root'], ['test.', 'test'], ['example.test.', 'ex']);

sub have_dns { return has_cmd('nsd') && has_cmd('unbound') }

sub nsd_conf {
    my ($dir, $zones, $port, $list) = @_;
    my $conf = join "\n", 'server:', '    ip-address: 127.0.0.1',
        "    port: $port", '    do-ip6: no', '    username: ""',
        '    chroot: ""', "    zonesdir: \"$zones\"", '    database: ""',
        "    zonelistfile: \"$dir/zone.list\"",
        "    xfrdfile: \"$dir/xfrd.state\"", "    xfrdir: \"$dir\"",
        "    pidfile: \"$dir/nsd.pid\"", '    server-count: 1',
        'remote-control:', '    control-enable: no', '';
    $conf .= "zone:\n    name: \"$_->[0]\"\n    zonefile: \"$_->[1].signed\"\n"
        for @{$list // \@ZONES};
    return $conf;
}

sub unbound_conf {
    my ($dir, $zones, $port, $nsd) = @_;
    my $conf = join "\n", 'server:', '    interface: 127.0.0.1',
        "    port: $port", '    do-ip6: no', '    username: ""',
        '    chroot: ""', "    directory: \"$dir\"",
        "    pidfile: \"$dir/unbound.pid\"", '    use-syslog: no',
        '    do-not-query-localhost: no',
        "    trust-anchor-file: \"$zones/root.ds\"",
        '    local-zone: "test." nodefault',
        '    rrset-roundrobin: yes',
        '    module-config: "validator iterator"', '    num-threads: 1',
        'remote-control:', '    control-enable: no', '';
    $conf .= "stub-zone:\n    name: \"$_->[0]\"\n    stub-addr: 127.0.0.1\@$nsd\n"
        for @ZONES;
    return $conf;
}

sub start_dns {
    my ($dir, $zones) = @_;
    mkdir $dir;
    my ($np, $up) = (free_port(), free_port());
    spew("$dir/nsd.conf", nsd_conf($dir, $zones, $np));
    spew("$dir/unbound.conf", unbound_conf($dir, $zones, $up, $np));
    my $h = { dir => $dir, resolver => "127.0.0.1:$up",
        log => "$dir/dns.log" };
    $h->{nsd} = run_daemon(['nsd', '-d', '-c', "$dir/nsd.conf"], $h->{log});
    $h->{unbound} = run_daemon(['unbound', '-d', '-c', "$dir/unbound.conf"],
        $h->{log});
    $h->{up} = wait_for_port($np, 10) && wait_for_port($up, 10);
    return $h;
}

sub start_zones {
    my ($dir, $port, $zones) = @_;
    mkdir $dir;
    my $h = { dir => $dir, port => $port, log => "$dir/nsd.log" };
    return restart_zones($h, $zones);
}

sub restart_zones {
    my ($h, $zones) = @_;
    my $dir = $h->{dir};
    stop_daemon($h->{nsd}) if $h->{nsd};
    my $from = -e $h->{log} ? -s $h->{log} : 0;
    my $n = 0;
    my @z = map { [$_, 'z' . $n++] } sort keys %$zones;
    spew("$dir/$_->[1].zone", $zones->{$_->[0]}) for @z;
    my $conf = nsd_conf($dir, $dir, $h->{port}, \@z);
    $conf =~ s/\.signed"/.zone"/g;
    spew("$dir/nsd.conf", $conf);
    $h->{nsd} = run_daemon(['nsd', '-d', '-c', "$dir/nsd.conf"], $h->{log});
    $h->{up} = wait_until(sub { !daemon_alive($h->{nsd})
        || (-e $h->{log} && substr(slurp($h->{log}), $from)
            =~ /nsd started/) }, 10)
        && daemon_alive($h->{nsd});
    return $h;
}

sub stop_dns {
    my ($h) = @_;
    stop_daemon($h->{$_}) for grep { $h->{$_} } qw(unbound nsd);
}

1;
