create table [Person].[BusinessEntity] (
    [BusinessEntityID] int not null, -- identity at the publisher
    [rowguid] uniqueidentifier not null,
    [ModifiedDate] datetime not null,
    constraint [PK_BusinessEntity] primary key ([BusinessEntityID])
)
go
if object_id(N'[Person].[sp_MSins_PersonBusinessEntity]', N'P') is not null drop procedure [Person].[sp_MSins_PersonBusinessEntity]
go
--INSERT procedure using CALL syntax
create procedure [Person].[sp_MSins_PersonBusinessEntity]
@c1 int,@c2 uniqueidentifier,@c3 datetime
as
begin
insert into [Person].[BusinessEntity]([BusinessEntityID]
,[rowguid]
,[ModifiedDate])
values (
 @c1
,@c2
,@c3
)
end
go
if object_id(N'[Person].[sp_MSupd_PersonBusinessEntity]', N'P') is not null drop procedure [Person].[sp_MSupd_PersonBusinessEntity]
go
--UPDATE procedure using SCALL syntax
create procedure [Person].[sp_MSupd_PersonBusinessEntity]
@c1 int = null,@c2 uniqueidentifier = null,@c3 datetime = null,@pkc1 int
,@bitmap binary(1)
as
begin
declare @primarykey_text nvarchar(2048) = N''
update [Person].[BusinessEntity] set
[rowguid] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [rowguid] end
,[ModifiedDate] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [ModifiedDate] end
where [BusinessEntityID] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[BusinessEntityID] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[Person].[BusinessEntity]', @param2=@primarykey_text, @param3=13233
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated UPDATE command for Table ''[Person].[BusinessEntity]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
go
if object_id(N'[Person].[sp_MSdel_PersonBusinessEntity]', N'P') is not null drop procedure [Person].[sp_MSdel_PersonBusinessEntity]
go
--DELETE procedure using CALL syntax
create procedure [Person].[sp_MSdel_PersonBusinessEntity]
@pkc1 int
as
begin
declare @primarykey_text nvarchar(2048) = N''
delete [Person].[BusinessEntity]
where [BusinessEntityID] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[BusinessEntityID] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[Person].[BusinessEntity]', @param2=@primarykey_text, @param3=13234
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated DELETE command for Table ''[Person].[BusinessEntity]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
go
